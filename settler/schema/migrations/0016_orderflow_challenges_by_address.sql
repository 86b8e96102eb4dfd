-- Ingress keeps at most a few live challenges per address, dropping the
-- oldest when it issues one more; this index finds them.
CREATE INDEX orderflow_challenges_address ON orderflow_challenges (address, expires_at);
