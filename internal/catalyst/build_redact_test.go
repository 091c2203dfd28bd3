package catalyst

import (
	"encoding/base64"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestRedact(t *testing.T) {
	const (
		token   = "ghp_0123456789abcdefghijABCDEFGHIJ012345"
		auth    = "YnVpbGRlcjpzM2NyZXQ=" // base64("builder:s3cret"), a Docker config's auth
		jwtTok  = "eyJhbGciOiJSUzI1NiIsImtpZCI6IjEifQ.eyJzdWIiOiJzeXN0ZW06c2EifQ.c2lnbmF0dXJlMTIz"
		literal = "not-a-real-token"
	)
	secrets := []string{literal, "abc"}
	tests := []struct {
		name string
		in   string
		// gone must not be in the output; when empty, the output must equal in (a positive control).
		gone []string
		want string
	}{
		// Hostile: each shape of credential goes.
		{name: "URL user and password", in: "fatal: unable to access 'https://alice:hunter2@git.example.com/org/repo.git/'",
			gone: []string{"alice", "hunter2"}, want: "fatal: unable to access 'https://[REDACTED]@git.example.com/org/repo.git/'"},
		{name: "URL token as user", in: "Cloning https://" + token + "@github.com/org/repo", gone: []string{token}},
		{name: "URL userinfo with any scheme", in: "git://x-access-token:tok3n@git.example.com/org/repo#refs/heads/main", gone: []string{"tok3n", "x-access-token"}},
		{name: "Authorization Basic header", in: "> Authorization: Basic " + auth, gone: []string{auth},
			want: "> Authorization: Basic [REDACTED]"},
		{name: "Authorization Bearer header", in: `"authorization": "Bearer abc.def.ghi"`, gone: []string{"abc.def.ghi"}},
		{name: "Bearer token in prose", in: "retrying with Bearer 9f8e7d6c5b4a3f2e1d0cZ now", gone: []string{"9f8e7d6c5b4a3f2e1d0cZ"}},
		{name: "Basic credentials in prose", in: "sent Basic dXNlcjpwYXNzd29yZA to the registry", gone: []string{"dXNlcjpwYXNzd29yZA"}},
		{name: "GitHub classic token", in: "using " + token + " for github.com", gone: []string{token}},
		{name: "GitHub server token", in: "ghs_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789", gone: []string{"ghs_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"}},
		{name: "GitHub OAuth token", in: "gho_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789", gone: []string{"gho_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"}},
		{name: "GitHub fine-grained token", in: "token github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyzABCDEF",
			gone: []string{"github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyzABCDEF"}},
		{name: "GitLab token", in: "glpat-aBcDeFgHiJkLmNoPqRsT ok", gone: []string{"glpat-aBcDeFgHiJkLmNoPqRsT"}},
		{name: "password and token key=values", in: "GIT_PASSWORD=hunter2 GIT_TOKEN=sometoken mode=fast",
			gone: []string{"hunter2", "sometoken"}, want: "GIT_PASSWORD=[REDACTED] GIT_TOKEN=[REDACTED] mode=fast"},
		{name: "secret key=value", in: "secret=opensesame client_secret='quoted value'", gone: []string{"opensesame", "quoted value"}},
		{name: "JSON keys", in: `{"username":"builder","password": "hunter2","identitytoken":"idtok","auth":"` + auth + `"}`,
			gone: []string{"hunter2", "idtok", auth}},
		{name: "password: after a colon, looking like one", in: "password: Hunter2", gone: []string{"Hunter2"}},
		{name: "JSON web token", in: "SA token " + jwtTok + " expired", gone: []string{"eyJhbGciOiJSUzI1NiIsImtpZCI6IjEifQ", "c2lnbmF0dXJlMTIz"}},
		{name: "a Docker config's auth alone", in: "pushing with " + auth + " now", gone: []string{auth}},
		{name: "a long unpadded base64 blob", in: "key Zm9vYmFyYmF6cXV4Zm9vYmFyYmF6cXV4MTIzNDU2 here", gone: []string{"Zm9vYmFyYmF6cXV4Zm9vYmFyYmF6cXV4MTIzNDU2"}},
		{name: "a Secret's literal value", in: "token was not-a-real-token, refused", gone: []string{literal}},
		{name: "a literal value inside a longer word", in: "xxnot-a-real-tokenxx", gone: []string{literal}},

		// Positive controls: ordinary build log lines pass unchanged.
		{name: "kaniko manifest", in: "INFO[0003] Retrieving image manifest golang:1.22"},
		{name: "kaniko run", in: "INFO[0010] RUN go build -o /app ./cmd/server"},
		{name: "kaniko failure", in: "error building image: error building stage: failed to execute command: waiting for process to exit: exit status 1"},
		{name: "digest", in: "INFO[0001] Resolved base name golang@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"},
		{name: "commit id", in: "Checking out commit 0123456789abcdef0123456789abcdef01234567 of git://github.com/org/repo#refs/heads/main"},
		{name: "push refused", in: `error checking push permissions -- make sure you entered the correct tag name, and that you are authenticated correctly, and try again: checking push permission for "registry.example.com:5000/team/web:0123456": POST https://registry.example.com:5000/v2/team/web/blobs/uploads/: UNAUTHORIZED: authentication required; [map[Action:push Class: Name:team/web Type:repository]]`},
		{name: "token in prose", in: "failed to fetch oauth token: unexpected status: 401 Unauthorized"},
		{name: "Basic in prose", in: "Basic authentication is required by the registry"},
		{name: "a path with capitals and digits", in: "COPY /kaniko/buildcontext/services/PaymentGateway2/Dockerfile /workspace/Build123/out"},
		{name: "a build argument", in: "ARG BUILD_VERSION=1.2.3 and GOFLAGS=-mod=readonly"},
		{name: "a module download", in: "go: downloading github.com/google/go-containerregistry v0.20.2-0.20240101000000-abcdef123456"},
		{name: "an email address", in: "Author: Alice <alice@example.com>"},
		{name: "a short Secret value is not hunted everywhere", in: "abc def"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Redact(tt.in, secrets)
			if len(tt.gone) == 0 && tt.want == "" {
				if got != tt.in {
					t.Fatalf("an ordinary line changed:\n in  %q\n out %q", tt.in, got)
				}
				return
			}
			for _, g := range tt.gone {
				if strings.Contains(got, g) {
					t.Errorf("Redact(%q) = %q still holds %q", tt.in, got, g)
				}
			}
			if !strings.Contains(got, Redacted) {
				t.Errorf("Redact(%q) = %q says nothing was redacted", tt.in, got)
			}
			if tt.want != "" && got != tt.want {
				t.Errorf("Redact(%q) = %q, want %q", tt.in, got, tt.want)
			}
			if again := Redact(got, secrets); again != got {
				t.Errorf("Redact is not idempotent: %q, then %q", got, again)
			}
		})
	}
}

func TestFailureEventRedacts(t *testing.T) {
	log := "INFO[0001] Retrieving image manifest golang:1.22\nfatal: could not read from https://alice:hunter2@git.example.com/org/repo\nusing not-a-real-token\n"
	got := FailureEvent(Failure("team/j", "BackoffLimitExceeded", "token=Sup3rSecret"), log, []string{"not-a-real-token"})
	for _, g := range []string{"hunter2", "not-a-real-token", "Sup3rSecret"} {
		if strings.Contains(got, g) {
			t.Errorf("FailureEvent = %q holds %q", got, g)
		}
	}
	if !strings.Contains(got, "INFO[0001] Retrieving image manifest golang:1.22") || !strings.Contains(got, "git.example.com/org/repo") {
		t.Errorf("FailureEvent = %q lost the ordinary part of the log", got)
	}
}

func TestSecretValues(t *testing.T) {
	auth := base64.StdEncoding.EncodeToString([]byte("builder:s3cret"))
	dockerConfig := `{"auths":{"registry.example.com":{"auth":"` + auth + `"},"ghcr.io":{"username":"u","password":"pa55word","identitytoken":"id-token-1"}}}`
	got := SecretValues(map[string][]byte{
		corev1.DockerConfigJsonKey: []byte(dockerConfig),
		"token":                    []byte("tok-1234\n"),
		"username":                 []byte("builder"),
		"pin":                      []byte("123"),
	})
	for _, want := range []string{dockerConfig, auth, "builder:s3cret", "s3cret", "pa55word", "id-token-1", "tok-1234", "tok-1234\n"} {
		if !slices.Contains(got, want) {
			t.Errorf("SecretValues = %q, want it to hold %q", got, want)
		}
	}
	for _, no := range []string{"builder", "123", ""} {
		if slices.Contains(got, no) {
			t.Errorf("SecretValues = %q holds %q (a user name, or shorter than %d)", got, no, MinSecretLength)
		}
	}
	legacy := SecretValues(map[string][]byte{corev1.DockerConfigKey: []byte(`{"registry.example.com":{"auth":"` + auth + `"}}`)})
	if !slices.Contains(legacy, "s3cret") {
		t.Errorf("SecretValues of a .dockercfg = %q, want the password", legacy)
	}
}
