/// <reference types="vitest/config" />
import react from "@vitejs/plugin-react";
import { defineConfig } from "vite";

// The build goes where the Python app serves it from (backend/gpupaas/static, not committed).
// `npm run dev` proxies the API to a `gpupaas serve` on 127.0.0.1:8000.
export default defineConfig({
  plugins: [react()],
  build: {
    outDir: "../backend/gpupaas/static",
    emptyOutDir: true,
    assetsDir: "assets",
    chunkSizeWarningLimit: 2000,
  },
  server: {
    proxy: {
      "/graphql": { target: "http://127.0.0.1:8000", ws: true },
    },
  },
  test: {
    environment: "jsdom",
    setupFiles: ["./src/test/setup.ts"],
    css: false,
    include: ["src/**/*.test.tsx", "src/**/*.test.ts"],
    // A page test renders the whole studio in jsdom: 1-6 s each on a quiet 2-core machine, more
    // when the machine is busy. The default 5 s made a loaded run fail on time alone.
    testTimeout: 30_000,
    // One module graph and one jsdom per worker, not per file: a fresh environment and import of
    // the studio for each of the 39 files was 73 s of a 232 s run on a busy 2-core machine, and
    // the whole run went from 232 s to 110 s. src/test/setup.ts resets what tests share.
    isolate: false,
  },
});
