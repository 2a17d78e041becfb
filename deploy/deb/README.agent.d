Fragments of the APM agent's configuration: every *.toml file here is read after
/etc/apm/agent.toml, in lexical order, and overrides the keys it sets (same keys,
same [agent] table). The service runs as apm-agent and must
read every file here, others must not: install each one 0640 root:apm-agent
(install -m 0640 -o root -g apm-agent FILE /etc/apm/agent.d/). Check the result
with: apm-agent check-config
