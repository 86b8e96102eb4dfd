// Package auth verifies the exchange's access tokens wherever a private
// endpoint is served. Tokens are ES256 JWTs signed by ingress; the public
// keys are published in Postgres (table signing_keys) so that every
// process, whichever signed the token, verifies it the same way.
//
// A Verifier accepts only ES256 with a known kid and a valid iat/exp, and
// remembers verified tokens in a bounded cache until they expire, so an
// authenticated request costs a map lookup rather than a signature check.
// Bearer is the gin middleware that protects a route group; it answers 401
// with code 1 and WWW-Authenticate: Bearer through the REST frame.
package auth
