-- Every process that verifies access tokens reads the recently revoked
-- sessions twice a second (platform/auth), so that a revoked session's
-- access tokens stop working at once; the partial index keeps that read
-- small however many sessions there are.
CREATE INDEX sessions_revoked_at ON sessions (revoked_at) WHERE revoked_at IS NOT NULL;
