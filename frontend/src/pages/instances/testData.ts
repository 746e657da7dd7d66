// Answers for the component tests of this area (fakeClient answers by operation name).

/** jsdom has no document.fonts; Mantine's autosizing Textarea listens to it. */
export function stubFonts(): void {
  (document as unknown as { fonts: unknown }).fonts ??= { addEventListener() {}, removeEventListener() {}, ready: Promise.resolve() };
}

export const me = {
  data: {
    me: {
      id: "u1",
      username: "ada",
      isPlatformAdmin: false,
      memberships: [
        { role: "MEMBER", project: { id: "p1", name: "ml", displayName: "ML" } },
        { role: "MEMBER", project: { id: "p2", name: "vision", displayName: "Vision" } },
      ],
    },
    projects: [
      { id: "p1", name: "ml", displayName: "ML" },
      { id: "p2", name: "vision", displayName: "Vision" },
    ],
  },
};

export const project = { id: "p1", name: "ml", displayName: "ML" };

/** What AuthProvider asks: the caller (Me) and the projects they may see (Projects). */
export const auth = {
  Me: me,
  Projects: { data: { projects: me.data.projects } },
};

const ACTIONS = ["UPDATE", "DEPLOY", "DESTROY", "DELETE", "SHARE"] as const;

/** A compute instance's `actions` as the API answers them: every action allowed but those
 * `refused` names, each with the API's reason. */
export function actions(refused: Partial<Record<(typeof ACTIONS)[number], string>> = {}) {
  return ACTIONS.map((name) => ({ name, allowed: refused[name] === undefined, reason: refused[name] ?? null }));
}

/** The API's reasons, word for word, for an instance while a run is under way. */
export const RUN_UNDER_WAY = {
  DEPLOY: "cannot deploy while the instance is IN_PROGRESS: wait until the current run finishes",
  DESTROY: "cannot destroy while the instance is IN_PROGRESS: wait until the current run finishes",
  DELETE: "cannot delete while the instance is IN_PROGRESS: wait until the current run finishes",
};

export function instance(overrides: Record<string, unknown> = {}) {
  return {
    id: "ci-1",
    name: "trainer",
    displayName: "Trainer",
    description: null,
    profileName: "a100-large",
    status: "IN_PROGRESS",
    statusMessage: "applying the namespace",
    labels: [{ key: "team", value: "ml" }],
    annotations: [],
    inputs: [{ key: "replicas", value: "2" }],
    outputs: [],
    allocationType: "DEDICATED",
    resources: { cpu: "32", memory: "256Gi", storage: "1Ti", gpuCount: 8, gpuVendor: "NVIDIA", gpuModel: "A100" },
    templateName: "k8s-namespace",
    templateVersion: "1.0.0",
    createdAt: "2025-03-01T10:00:00+00:00",
    updatedAt: "2025-03-01T10:01:00+00:00",
    project,
    profile: { id: "prof-1", name: "a100-large", displayName: "A100 Large" },
    owner: { username: "ada" },
    outdated: false,
    sharing: { mode: "NONE", projects: [] },
    cluster: { id: "c1", name: "local", displayName: "Local", gpuModels: ["H100 80GB"] },
    services: [],
    actions: actions(RUN_UNDER_WAY),
    runs: [
      {
        id: "r1",
        action: "DEPLOY",
        status: "RUNNING",
        message: null,
        attempts: 1,
        createdAt: "2025-03-01T10:00:30+00:00",
        startedAt: "2025-03-01T10:00:40+00:00",
        finishedAt: null,
      },
    ],
    ...overrides,
  };
}
