"""Image pull secrets: a project's registry credentials, which its templates and services name."""
