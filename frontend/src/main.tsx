import "@mantine/core/styles.css";
import "@mantine/notifications/styles.css";

import { MantineProvider, createTheme } from "@mantine/core";
import { Notifications } from "@mantine/notifications";
import { StrictMode } from "react";
import { createRoot } from "react-dom/client";
import { Provider as UrqlProvider } from "urql";

import { App } from "./app/App";
import { createGraphqlClient } from "./graphql/client";

const theme = createTheme({ primaryColor: "blue", defaultRadius: "md" });
const client = createGraphqlClient();

createRoot(document.getElementById("root")!).render(
  <StrictMode>
    <MantineProvider theme={theme} defaultColorScheme="light">
      <Notifications position="top-right" />
      <UrqlProvider value={client}>
        <App />
      </UrqlProvider>
    </MantineProvider>
  </StrictMode>,
);
