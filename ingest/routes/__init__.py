"""The service's routers: metrics intake and health."""
