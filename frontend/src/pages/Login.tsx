import { Alert, Button, Center, Divider, Paper, PasswordInput, Stack, TextInput, Title } from "@mantine/core";
import { useState } from "react";
import { useNavigate, useSearchParams } from "react-router-dom";
import { useMutation, useQuery } from "urql";

import { LoginDocument, SignInOptionsDocument, oidcErrorMessage, useAuth } from "../app/auth";
import { describeError } from "../components/errors";

/** Where to come back to after signing in: a path of this site only. */
export function localNext(next: string | null): string {
  if (!next || !next.startsWith("/") || next.startsWith("//") || next.startsWith("/\\")) return "/";
  return next;
}

export function LoginPage() {
  const [username, setUsername] = useState("");
  const [password, setPassword] = useState("");
  const [params] = useSearchParams();
  // An error the OpenID Connect callback sent us back with, until the person tries again.
  const [message, setMessage] = useState<string | null>(() => oidcErrorMessage(params.get("oidc_error")));
  const [{ fetching }, login] = useMutation(LoginDocument);
  const [options] = useQuery({ query: SignInOptionsDocument });
  const { refresh } = useAuth();
  const navigate = useNavigate();
  const next = localNext(params.get("next"));
  const oidc = options.data?.signInOptions.oidc ?? null;

  async function submit(event: React.FormEvent) {
    event.preventDefault();
    setMessage(null);
    const result = await login({ username, password });
    const payload = result.data?.login;
    if (result.error || !payload) {
      setMessage(describeError(result.error) ?? "Could not sign in.");
      return;
    }
    if (payload.userErrors.length > 0 || !payload.user) {
      setMessage(payload.userErrors[0]?.message ?? "Wrong username or password.");
      return;
    }
    refresh();
    navigate(next, { replace: true });
  }

  return (
    <Center mih="100vh" p="md">
      <Paper withBorder p="xl" w={380} maw="100%">
        <Stack>
          <Title order={2}>Sign in to gpupaas</Title>
          {message && (
            <Alert color="red" role="alert">
              {message}
            </Alert>
          )}
          {oidc && (
            <>
              {/* A full page load: the server sends the browser on to the provider. */}
              <Button component="a" href={`${oidc.loginUrl}?${new URLSearchParams({ next }).toString()}`} variant="filled">
                Sign in with {oidc.name}
              </Button>
              <Divider label="or with a password" labelPosition="center" />
            </>
          )}
          <form onSubmit={submit}>
            <Stack>
              <TextInput label="Username" autoComplete="username" required value={username} onChange={(e) => setUsername(e.currentTarget.value)} />
              <PasswordInput label="Password" autoComplete="current-password" required value={password} onChange={(e) => setPassword(e.currentTarget.value)} />
              <Button type="submit" loading={fetching} variant={oidc ? "default" : "filled"}>
                Sign in
              </Button>
            </Stack>
          </form>
        </Stack>
      </Paper>
    </Center>
  );
}
