import { AppShell, Burger, Divider, Group, Menu, NavLink, ScrollArea, Select, Text, UnstyledButton } from "@mantine/core";
import { useDisclosure } from "@mantine/hooks";
import {
  IconApps,
  IconBox,
  IconChartBar,
  IconChevronDown,
  IconClockPause,
  IconCpu,
  IconDashboard,
  IconFileCode,
  IconLayoutGrid,
  IconLock,
  IconLogout,
  IconServer,
  IconHistory,
  IconTemplate,
  IconUser,
  IconUsers,
  IconUsersGroup,
  IconWebhook,
} from "@tabler/icons-react";
import { useEffect, type ReactNode } from "react";
import { Link, Navigate, Outlet, useLocation, useNavigate } from "react-router-dom";

import { ConnectionBanner } from "../components/ConnectionBanner";
import { ErrorState, Loading } from "../components/states";
import { useAuth } from "./auth";
import { NotFound, homeProject } from "./NotFound";
import { rememberProject, useProject } from "./project";

function Item({ to, label, icon }: { to: string; label: string; icon: ReactNode }) {
  const location = useLocation();
  return (
    <NavLink
      component={Link}
      to={to}
      label={label}
      leftSection={icon}
      active={location.pathname === to || location.pathname.startsWith(`${to}/`)}
    />
  );
}

/** The signed-in frame: project switcher, role-aware navigation (admins see the studio). */
export function Layout() {
  const { me, projects, fetching, error, logout, refresh } = useAuth();
  const { project, isAdmin } = useProject();
  const [opened, { toggle, close }] = useDisclosure();
  const navigate = useNavigate();
  const location = useLocation();
  useEffect(() => close(), [location.pathname, close]);
  useEffect(() => {
    if (project) rememberProject(project);
  }, [project]);

  if (!me) {
    if (fetching) return <Loading label="Signing in" />;
    if (error) return <ErrorState message={error} onRetry={refresh} />;
    return <Navigate to={`/login?next=${encodeURIComponent(location.pathname)}`} replace />;
  }
  const known = projects.some((p) => p.name === project);
  if (!known && fetching) return <Loading label="Loading projects" />;
  // Another project's URL (or one that does not exist): the normal frame around a not-found
  // message, its navigation that of a project the user has.
  const home = known ? project : homeProject(projects)?.name;
  if (!home) {
    return <ErrorState message={`Project "${project}" does not exist, or you are not a member of it.`} />;
  }
  const base = `/p/${home}`;
  return (
    <AppShell header={{ height: 56 }} navbar={{ width: 250, breakpoint: "sm", collapsed: { mobile: !opened } }} padding="md">
      <AppShell.Header>
        <Group h="100%" px="md" justify="space-between" wrap="nowrap">
          <Group gap="sm" wrap="nowrap">
            <Burger opened={opened} onClick={toggle} hiddenFrom="sm" size="sm" aria-label="Menu" />
            <Text fw={700} component={Link} to={`${base}/dashboard`} style={{ textDecoration: "none", color: "inherit" }}>
              gpupaas
            </Text>
            <Select
              aria-label="Project"
              size="xs"
              w={180}
              allowDeselect={false}
              value={known ? project : null}
              placeholder="Choose a project"
              data={projects.map((p) => ({ value: p.name, label: p.displayName || p.name }))}
              onChange={(value) => value && navigate(`/p/${value}/dashboard`)}
            />
          </Group>
          <Menu position="bottom-end">
            <Menu.Target>
              <UnstyledButton aria-label="Account">
                <Group gap={4} wrap="nowrap">
                  <Text size="sm">{me.username}</Text>
                  <IconChevronDown size={14} />
                </Group>
              </UnstyledButton>
            </Menu.Target>
            <Menu.Dropdown>
              <Menu.Label>{me.isPlatformAdmin ? "Platform admin" : isAdmin ? "Project admin" : "Member"}</Menu.Label>
              <Menu.Item component={Link} to={`${base}/account`} leftSection={<IconUser size={14} />}>
                Account
              </Menu.Item>
              <Menu.Item leftSection={<IconLogout size={14} />} onClick={() => void logout()}>
                Sign out
              </Menu.Item>
            </Menu.Dropdown>
          </Menu>
        </Group>
      </AppShell.Header>
      <AppShell.Navbar p="xs">
        <ScrollArea>
          <nav aria-label="Main">
            <Item to={`${base}/dashboard`} label="Dashboard" icon={<IconDashboard size={16} />} />
            <Item to={`${base}/catalog`} label="Catalog" icon={<IconLayoutGrid size={16} />} />
            <Item to={`${base}/instances`} label="Compute Instances" icon={<IconCpu size={16} />} />
            <Item to={`${base}/services`} label="Service Instances" icon={<IconApps size={16} />} />
            <Item to={`${base}/usage`} label="Usage" icon={<IconChartBar size={16} />} />
            <Item to={`${base}/schedules`} label="Schedules" icon={<IconClockPause size={16} />} />
            {isAdmin && (
              <>
                <Divider my="sm" label="Studio" labelPosition="left" />
                <Item to={`${base}/studio/profiles`} label="Compute Profiles" icon={<IconBox size={16} />} />
                <Item to={`${base}/studio/templates`} label="Environment Templates" icon={<IconFileCode size={16} />} />
                <Item to={`${base}/studio/instance-templates`} label="Instance Templates" icon={<IconTemplate size={16} />} />
                <Item to={`${base}/studio/members`} label="Members" icon={<IconUsers size={16} />} />
                <Item to={`${base}/studio/webhooks`} label="Webhooks" icon={<IconWebhook size={16} />} />
                <Item to={`${base}/studio/pull-secrets`} label="Pull Secrets" icon={<IconLock size={16} />} />
                {me.isPlatformAdmin && <Item to={`${base}/studio/clusters`} label="Clusters" icon={<IconServer size={16} />} />}
                <Item to={`${base}/studio/audit`} label="Audit log" icon={<IconHistory size={16} />} />
              </>
            )}
            {me.isPlatformAdmin && (
              <>
                <Divider my="sm" label="Administration" labelPosition="left" />
                <Item to={`${base}/admin/users`} label="Users" icon={<IconUser size={16} />} />
                <Item to={`${base}/admin/projects`} label="Projects" icon={<IconUsersGroup size={16} />} />
              </>
            )}
          </nav>
        </ScrollArea>
      </AppShell.Navbar>
      <AppShell.Main>
        <ConnectionBanner />
        {known ? <Outlet /> : <NotFound message={`Project "${project}" does not exist, or you are not a member of it.`} />}
      </AppShell.Main>
    </AppShell>
  );
}

/** Pages for project admins only (the studio). */
export function AdminOnly({ children }: { children: ReactNode }) {
  const { isAdmin } = useProject();
  if (!isAdmin) return <ErrorState message="Only the project's admins may open the studio." />;
  return <>{children}</>;
}
