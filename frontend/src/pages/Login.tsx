import { Alert, Button, Center, Paper, PasswordInput, Stack, TextInput, Title } from "@mantine/core";
import { useState } from "react";
import { useNavigate, useSearchParams } from "react-router-dom";
import { useMutation } from "urql";

import { LoginDocument, useAuth } from "../app/auth";
import { describeError } from "../components/errors";

export function LoginPage() {
  const [username, setUsername] = useState("");
  const [password, setPassword] = useState("");
  const [message, setMessage] = useState<string | null>(null);
  const [{ fetching }, login] = useMutation(LoginDocument);
  const { refresh } = useAuth();
  const navigate = useNavigate();
  const [params] = useSearchParams();

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
    navigate(params.get("next") || "/", { replace: true });
  }

  return (
    <Center mih="100vh" p="md">
      <Paper withBorder p="xl" w={380} maw="100%">
        <form onSubmit={submit}>
          <Stack>
            <Title order={2}>Sign in to gpupaas</Title>
            {message && (
              <Alert color="red" role="alert">
                {message}
              </Alert>
            )}
            <TextInput label="Username" autoComplete="username" required value={username} onChange={(e) => setUsername(e.currentTarget.value)} />
            <PasswordInput label="Password" autoComplete="current-password" required value={password} onChange={(e) => setPassword(e.currentTarget.value)} />
            <Button type="submit" loading={fetching}>
              Sign in
            </Button>
          </Stack>
        </form>
      </Paper>
    </Center>
  );
}
