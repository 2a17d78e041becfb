Fragments of the APM agent's configuration: every *.toml file here is read after
/etc/apm/agent.toml, in lexical order, and overrides the keys it sets (same keys,
same [agent] table). A file that sets api_key must not be readable by others
(chmod 0600, owner apm-agent). Check the result with: apm-agent check-config
