package query

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// ErrForbidden, wrapped by the error of a Config.Auth hook, answers 403
// Forbidden (the caller is known but may not ask); any other error
// answers 401 Unauthorized.
var ErrForbidden = errors.New("query: forbidden")

// HTTPS is the scheme prefix of an advertised address served over TLS; an
// address without a scheme is plain HTTP.
const HTTPS = "https://"

// authenticate runs cfg.Auth before next: a refused request is answered
// 401 or 403 with a JSON body naming the reason and never reaches the
// stores, the metrics or the health endpoints.
func (s *server) authenticate(next http.Handler) http.Handler {
	if s.cfg.Auth == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		err := s.cfg.Auth(r)
		switch {
		case err == nil:
			next.ServeHTTP(w, r)
		case errors.Is(err, ErrForbidden):
			msg := strings.TrimPrefix(err.Error(), ErrForbidden.Error()+": ")
			writeError(w, http.StatusForbidden, apiError{Error: ErrForbidden.Error() + ": " + msg})
		default:
			writeError(w, http.StatusUnauthorized, apiError{Error: "query: unauthorized: " + err.Error()})
		}
	})
}

// ownerURL is the base URL of the instance advertising addr: https for an
// address with the https:// prefix, else http. An instance serving TLS
// forwards over TLS only.
func (s *server) ownerURL(addr string) (string, error) {
	if strings.HasPrefix(addr, HTTPS) {
		return addr, nil
	}
	if s.cfg.TLS {
		return "", fmt.Errorf("it advertises plain HTTP (%s) and this instance forwards over TLS only: serve every instance with WithHTTPTLS", addr)
	}
	return "http://" + addr, nil
}
