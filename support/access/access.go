// Package access holds what authentication decides and every layer that
// answers a request reads: the project a caller acts for when there is no
// authentication, and the errors an authenticator wraps to refuse one. It
// is a leaf: the receiver, the server and package auth all depend on it,
// and it on nothing of theirs.
package access

import "errors"

// DefaultProject is the project of every request when no authenticator is
// configured.
const DefaultProject = "default"

// Errors an authenticator wraps to choose the answer: ErrUnauthenticated
// is answered 401 (no or an unknown credential), ErrForbidden 403 (a
// credential without the scope).
var (
	ErrUnauthenticated = errors.New("unauthenticated")
	ErrForbidden       = errors.New("forbidden")
)
