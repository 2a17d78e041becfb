"""The dashboard's pages: each module has ``layout(ctx, ...)`` and ``register(app, ctx)``."""
