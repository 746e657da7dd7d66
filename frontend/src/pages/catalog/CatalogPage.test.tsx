import { fireEvent, screen, waitFor, within } from "@testing-library/react";
import { describe, expect, it } from "vitest";

import { AuthProvider } from "../../app/auth";
import { fakeClient, renderPage } from "../../test/render";
import { auth } from "../instances/testData";
import { CatalogPage } from "./CatalogPage";
import { SkuPage } from "./SkuPage";

const sku = (id: string, overrides: Record<string, unknown> = {}) => ({
  id,
  name: `sku-${id}`,
  displayName: `SKU ${id}`,
  description: "For training",
  iconUrl: null,
  allocationType: "SHARED",
  resources: { cpu: "8", memory: "64Gi", storage: "100Gi", gpuCount: 2, gpuVendor: "NVIDIA", gpuModel: "L40S" },
  project: { id: "p1", name: "ml", displayName: "ML" },
  ...overrides,
});

function renderCatalog(answers: Parameters<typeof fakeClient>[0]) {
  const fake = fakeClient({ ...auth, ...answers });
  renderPage(
    <AuthProvider>
      <CatalogPage />
    </AuthProvider>,
    { client: fake.client, path: "/p/ml/catalog", pattern: "/p/:project/catalog" },
  );
  return fake;
}

describe("CatalogPage", () => {
  it("shows SKUs as cards with resources, a fallback icon, and a way to launch", async () => {
    renderCatalog({
      CatalogSkus: {
        data: {
          catalog: [
            sku("a"),
            sku("b", { iconUrl: "https://example.invalid/broken.png", project: { id: "p9", name: "platform", displayName: "Platform" } }),
          ],
        },
      },
    });
    const card = (await screen.findByText("SKU a")).closest("article")!;
    expect(within(card).getByTestId("sku-icon-fallback")).toBeInTheDocument();
    expect(within(card).getByText("2 × NVIDIA L40S")).toBeInTheDocument();
    expect(within(card).getByText("64Gi")).toBeInTheDocument();
    expect(within(card).getByRole("link", { name: "Launch SKU a" })).toHaveAttribute("href", "/p/ml/catalog/a/launch");

    const shared = screen.getByText("SKU b").closest("article")!;
    expect(within(shared).getByText("Shared by Platform")).toBeInTheDocument();
    const image = shared.querySelector("img")!;
    fireEvent.error(image);
    expect(within(shared).getByTestId("sku-icon-fallback")).toBeInTheDocument();
  });

  it("searches the catalog on the server", async () => {
    const { calls } = renderCatalog({ CatalogSkus: (variables) => ({ data: { catalog: variables.search ? [] : [sku("a")] } }) });
    await screen.findByText("SKU a");
    fireEvent.change(screen.getByRole("textbox", { name: "Search the catalog" }), { target: { value: "h100" } });
    expect(await screen.findByText("No SKU matches your search")).toBeInTheDocument();
    expect(calls.filter((c) => c.name === "CatalogSkus").map((c) => c.variables.search)).toEqual([null, "h100"]);
  });
});

describe("SkuPage", () => {
  it("puts the server's rendered readme into the page, and links to launch", async () => {
    const fake = fakeClient({
      ...auth,
      CatalogSku: {
        data: {
          computeProfile: {
            ...sku("a"),
            readmeHtml: "<h2>Getting started</h2><p>Use <code>kubectl</code>.</p>",
            labels: [],
            environmentTemplate: { id: "t1", name: "ns", displayName: "Namespace" },
            environmentTemplateVersion: { id: "v1", version: "1.0.0", inputs: [] },
            inputSettings: [],
          },
        },
      },
    });
    renderPage(
      <AuthProvider>
        <SkuPage />
      </AuthProvider>,
      { client: fake.client, path: "/p/ml/catalog/a", pattern: "/p/:project/catalog/:profileId" },
    );
    await waitFor(() => expect(screen.getByRole("heading", { name: "Getting started" })).toBeInTheDocument());
    expect(screen.getByTestId("sku-readme").querySelector("code")).toHaveTextContent("kubectl");
    expect(screen.getByRole("link", { name: "Launch" })).toHaveAttribute("href", "/p/ml/catalog/a/launch");
  });
});
