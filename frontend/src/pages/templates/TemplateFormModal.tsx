import { Button, Group, Modal, Stack, TextInput, Textarea } from "@mantine/core";
import { notifications } from "@mantine/notifications";
import { useState } from "react";
import { useNavigate } from "react-router-dom";
import { useMutation } from "urql";

import { describeError, errorsByField, type ServerError } from "../../components/errors";
import { FormErrors } from "../../components/FormErrors";
import { EnvTemplateCreateDocument, EnvTemplateUpdateDocument } from "./operations";

const FIELDS = ["name", "displayName", "description"];

/** "Add Environment Template": a name (it cannot change), a display name and a description. */
export function CreateTemplateModal({ opened, project, onClose }: { opened: boolean; project: string; onClose: () => void }) {
  return (
    <Modal opened={opened} onClose={onClose} title="Add Environment Template" centered>
      {/* Inside the modal: an empty form each time it opens. */}
      <CreateTemplateForm project={project} onClose={onClose} />
    </Modal>
  );
}

function CreateTemplateForm({ project, onClose }: { project: string; onClose: () => void }) {
  const navigate = useNavigate();
  const [name, setName] = useState("");
  const [displayName, setDisplayName] = useState("");
  const [description, setDescription] = useState("");
  const [errors, setErrors] = useState<Record<string, string>>({});
  const [{ fetching }, create] = useMutation(EnvTemplateCreateDocument);

  async function submit(event: React.FormEvent) {
    event.preventDefault();
    if (!name.trim()) {
      setErrors({ name: "Required" });
      return;
    }
    const result = await create({
      input: { project, name: name.trim(), displayName: displayName.trim() || null, description: description.trim() || null },
    });
    const payload = result.data?.createEnvironmentTemplate;
    if (result.error || !payload) {
      setErrors({ "": describeError(result.error) ?? "Could not add the template." });
      return;
    }
    if (payload.userErrors.length > 0 || !payload.environmentTemplate) {
      setErrors(errorsByField(payload.userErrors as readonly ServerError[]));
      return;
    }
    notifications.show({ color: "green", message: `Environment template "${payload.environmentTemplate.name}" added: add its first version.` });
    onClose();
    navigate(`/p/${project}/studio/templates/${payload.environmentTemplate.id}`);
  }

  return (
    <form onSubmit={submit} noValidate>
      <Stack>
        <TextInput
          label="Unique Name"
          description="Lowercase letters, digits and '-'. It cannot be changed later."
          required
          value={name}
          error={errors.name}
          onChange={(e) => setName(e.currentTarget.value)}
          data-autofocus
        />
        <TemplateFields
          displayName={displayName}
          description={description}
          errors={errors}
          onDisplayName={setDisplayName}
          onDescription={setDescription}
          displayNameHelp="Defaults to the unique name."
        />
        <FormButtons saving={fetching} label="Add Environment Template" onClose={onClose} />
      </Stack>
    </form>
  );
}

/** Edit a template's display name and description (its unique name cannot change). */
export function EditTemplateModal({
  template,
  onClose,
  onSaved,
}: {
  template: { id: string; name: string; displayName: string; description?: string | null } | null;
  onClose: () => void;
  onSaved: () => void;
}) {
  return (
    <Modal opened={template !== null} onClose={onClose} title="Edit Environment Template" centered>
      {template && <EditTemplateForm key={template.id} template={template} onClose={onClose} onSaved={onSaved} />}
    </Modal>
  );
}

function EditTemplateForm({
  template,
  onClose,
  onSaved,
}: {
  template: { id: string; name: string; displayName: string; description?: string | null };
  onClose: () => void;
  onSaved: () => void;
}) {
  const [displayName, setDisplayName] = useState(template.displayName);
  const [description, setDescription] = useState(template.description ?? "");
  const [errors, setErrors] = useState<Record<string, string>>({});
  const [{ fetching }, update] = useMutation(EnvTemplateUpdateDocument);

  async function submit(event: React.FormEvent) {
    event.preventDefault();
    if (!displayName.trim()) {
      setErrors({ displayName: "Required" });
      return;
    }
    const result = await update({ input: { id: template.id, displayName: displayName.trim(), description } });
    const payload = result.data?.updateEnvironmentTemplate;
    if (result.error || !payload) {
      setErrors({ "": describeError(result.error) ?? "Could not save the template." });
      return;
    }
    if (payload.userErrors.length > 0) {
      setErrors(errorsByField(payload.userErrors));
      return;
    }
    notifications.show({ color: "green", message: "Template saved." });
    onSaved();
    onClose();
  }

  return (
    <form onSubmit={submit} noValidate>
      <Stack>
        <TextInput label="Unique Name" value={template.name} readOnly variant="filled" description="It cannot be changed." />
        <TemplateFields
          displayName={displayName}
          description={description}
          errors={errors}
          onDisplayName={setDisplayName}
          onDescription={setDescription}
          displayNameRequired
        />
        <FormButtons saving={fetching} label="Save Changes" onClose={onClose} />
      </Stack>
    </form>
  );
}

/** The display name and the description (both dialogs), and the errors no field shows. */
function TemplateFields({
  displayName,
  description,
  errors,
  onDisplayName,
  onDescription,
  displayNameRequired = false,
  displayNameHelp,
}: {
  displayName: string;
  description: string;
  errors: Record<string, string>;
  onDisplayName: (value: string) => void;
  onDescription: (value: string) => void;
  displayNameRequired?: boolean;
  displayNameHelp?: string;
}) {
  return (
    <>
      <TextInput
        label="Display Name"
        description={displayNameHelp}
        required={displayNameRequired}
        value={displayName}
        error={errors.displayName}
        onChange={(e) => onDisplayName(e.currentTarget.value)}
      />
      <Textarea
        label="Description"
        autosize
        minRows={2}
        value={description}
        error={errors.description}
        onChange={(e) => onDescription(e.currentTarget.value)}
      />
      <FormErrors title="Not saved" errors={errors} placed={FIELDS} />
    </>
  );
}

function FormButtons({ saving, label, onClose }: { saving: boolean; label: string; onClose: () => void }) {
  return (
    <Group justify="flex-end">
      <Button variant="default" onClick={onClose}>
        Cancel
      </Button>
      <Button type="submit" loading={saving}>
        {label}
      </Button>
    </Group>
  );
}
