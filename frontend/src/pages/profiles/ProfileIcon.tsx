import { Box, Center } from "@mantine/core";
import { IconCpu } from "@tabler/icons-react";
import { useEffect, useState } from "react";

/** A profile's icon as end users see it in the catalog; a generic icon when there is no URL or
 * the image does not load. `onStatus` tells whether the image loaded. */
export function ProfileIcon({
  url,
  name,
  size = 64,
  onStatus,
}: {
  url: string | null | undefined;
  name: string;
  size?: number;
  onStatus?: (status: "none" | "loading" | "loaded" | "failed") => void;
}) {
  const src = url?.trim() || "";
  // What became of the image at `src` (a new URL starts loading again).
  const [seen, setSeen] = useState<{ src: string; status: "loaded" | "failed" } | null>(null);
  const status = !src ? "none" : seen?.src === src ? seen.status : "loading";
  const setStatus = (next: "loaded" | "failed") => setSeen({ src, status: next });
  useEffect(() => {
    onStatus?.(status);
  }, [status, onStatus]);

  const frame = {
    width: size,
    height: size,
    borderRadius: "var(--mantine-radius-md)",
    border: "1px solid var(--mantine-color-default-border)",
    overflow: "hidden",
    flexShrink: 0,
  } as const;

  if (!src || status === "failed") {
    return (
      <Center style={frame} bg="var(--mantine-color-default-hover)" data-testid="profile-icon-fallback" role="img" aria-label={`${name} (default icon)`}>
        <IconCpu size={size * 0.55} stroke={1.4} color="var(--mantine-color-dimmed)" />
      </Center>
    );
  }
  return (
    <Box style={frame}>
      <img
        src={src}
        alt={`${name} icon`}
        width={size}
        height={size}
        style={{ objectFit: "contain", display: "block" }}
        referrerPolicy="no-referrer"
        onLoad={() => setStatus("loaded")}
        onError={() => setStatus("failed")}
      />
    </Box>
  );
}
