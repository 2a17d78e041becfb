"""The service's routers: sample intake (POST /v1/metrics) and health."""
