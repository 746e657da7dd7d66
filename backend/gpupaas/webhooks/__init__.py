"""Webhooks: a project's receivers of events, signed deliveries from the database, their log."""
