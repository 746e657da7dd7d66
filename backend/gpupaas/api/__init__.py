"""The GraphQL API put together: the root Query, Mutation and Subscription merged from every
domain's pieces, the schema with its limits and error policy (`schema`), and the wiring of the
hooks by which lower domains ask higher ones (`wiring`). The top of the layers: it imports every
domain, and nothing below imports it."""
