import type { CodegenConfig } from "@graphql-codegen/cli";

// Typed operations from the API's schema (schema.graphql at the repository's root, exported and
// checked by `make test`) and the operations written with graphql() in src/. Generated into
// src/gql/ (not committed) by every build, typecheck and test run.
const config: CodegenConfig = {
  schema: "../schema.graphql",
  documents: ["src/**/*.{ts,tsx}", "!src/gql/**/*"],
  ignoreNoDocuments: true,
  generates: {
    "./src/gql/": {
      preset: "client",
      config: {
        enumsAsTypes: true,
        scalars: { DateTime: "string", JSON: "unknown", Date: "string", Decimal: "string" },
        useTypeImports: true,
      },
      presetConfig: { fragmentMasking: false },
    },
  },
};

export default config;
