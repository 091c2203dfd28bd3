// Package sourcetest makes real Git repositories on disk and serves them over https (the smart HTTP
// protocol, answered by go-git's own upload-pack) on 127.0.0.1, for the tests of fetching and deploying.
package sourcetest

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/pktline"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp/capability"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/plumbing/transport/server"

	"github.com/platform-operator/platform-operator/internal/testutil/pki"
)

// Repo is a Git repository with a work tree, on disk.
type Repo struct {
	// Dir is the repository's work tree (its .git inside).
	Dir  string
	repo *git.Repository
}

// Init makes an empty repository in dir whose first commit goes to branch.
func Init(dir, branch string) (*Repo, error) {
	r, err := git.PlainInitWithOptions(dir, &git.PlainInitOptions{
		InitOptions: git.InitOptions{DefaultBranch: plumbing.NewBranchReferenceName(branch)},
	})
	if err != nil {
		return nil, err
	}
	return &Repo{Dir: dir, repo: r}, nil
}

// Commit writes files (path to content), removes the paths in remove, and commits everything; it returns
// the new commit's full id.
func (r *Repo) Commit(message string, files map[string]string, remove ...string) (string, error) {
	for name, content := range files {
		p := filepath.Join(r.Dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return "", err
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			return "", err
		}
	}
	for _, name := range remove {
		if err := os.RemoveAll(filepath.Join(r.Dir, filepath.FromSlash(name))); err != nil {
			return "", err
		}
	}
	wt, err := r.repo.Worktree()
	if err != nil {
		return "", err
	}
	if err := wt.AddWithOptions(&git.AddOptions{All: true}); err != nil {
		return "", err
	}
	h, err := wt.Commit(message, &git.CommitOptions{
		All:    true,
		Author: &object.Signature{Name: "test", Email: "test@example.com", When: time.Unix(1700000000, 0)},
	})
	if err != nil {
		return "", err
	}
	return h.String(), nil
}

// Server serves the repositories under Root over https: GET <path>/info/refs?service=git-upload-pack and
// POST <path>/git-upload-pack, the smart HTTP protocol clients fetch with.
type Server struct {
	// Root is the directory the URL paths are under.
	Root string
	// Username and Password, when set, are the basic credentials every request must carry.
	Username, Password string
	// SHA1InWant advertises allow-reachable-sha1-in-want: clients may then fetch a commit by its id.
	SHA1InWant bool
	// Stall makes the server hang: every response sends its headers and then nothing, until the client
	// goes away.
	Stall bool

	srv      *httptest.Server
	requests atomic.Int64
}

// Start starts the server on 127.0.0.1, with a certificate for 127.0.0.1, ::1 and localhost.
func (s *Server) Start() {
	s.srv = httptest.NewUnstartedServer(http.HandlerFunc(s.serve))
	s.srv.TLS = &tls.Config{Certificates: []tls.Certificate{localCert()}}
	s.srv.StartTLS()
}

// Requests is how many requests the server has received.
func (s *Server) Requests() int64 { return s.requests.Load() }

var (
	certOnce sync.Once
	cert     tls.Certificate
	caPEM    []byte
)

// localCert is a serving certificate for the names a test server is reached by (127.0.0.1, ::1 and
// localhost), signed by a CA of its own whose PEM is caPEM; both are made once per process.
func localCert() tls.Certificate {
	certOnce.Do(func() {
		ca, err := pki.NewCA("sourcetest CA", 10*365*24*time.Hour)
		if err != nil {
			panic(err)
		}
		pair, err := ca.Server("sourcetest")
		if err != nil {
			panic(err)
		}
		if cert, err = tls.X509KeyPair(pair.Cert, pair.Key); err != nil {
			panic(err)
		}
		caPEM = ca.PEM
	})
	return cert
}

// Close stops the server.
func (s *Server) Close() { s.srv.Close() }

// URL is the https URL of the repository at dir (under Root).
func (s *Server) URL(dir string) string {
	rel, _ := filepath.Rel(s.Root, dir)
	return s.srv.URL + "/" + filepath.ToSlash(rel)
}

// LocalhostURL is URL with the host named localhost instead of 127.0.0.1.
func (s *Server) LocalhostURL(dir string) string {
	return strings.Replace(s.URL(dir), "://127.0.0.1:", "://localhost:", 1)
}

// CABundle is the PEM of the CA clients must trust.
func (s *Server) CABundle() []byte {
	localCert()
	return caPEM
}

// CertPool is the CA as a pool.
func (s *Server) CertPool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AppendCertsFromPEM(s.CABundle())
	return p
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	s.requests.Add(1)
	if s.Stall {
		w.Header().Set("Content-Type", "application/x-git-upload-pack-advertisement")
		w.WriteHeader(http.StatusOK)
		if fl, ok := w.(http.Flusher); ok {
			fl.Flush()
		}
		<-r.Context().Done()
		return
	}
	if s.Username != "" || s.Password != "" {
		u, p, ok := r.BasicAuth()
		if !ok || u != s.Username || p != s.Password {
			w.Header().Set("WWW-Authenticate", `Basic realm="git"`)
			http.Error(w, "authentication required", http.StatusUnauthorized)
			return
		}
	}
	var repoPath string
	switch {
	case r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/info/refs"):
		repoPath = strings.TrimSuffix(r.URL.Path, "/info/refs")
		if r.URL.Query().Get("service") != transport.UploadPackServiceName {
			http.Error(w, "only git-upload-pack is served", http.StatusForbidden)
			return
		}
	case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/git-upload-pack"):
		repoPath = strings.TrimSuffix(r.URL.Path, "/git-upload-pack")
	default:
		http.NotFound(w, r)
		return
	}
	dir := filepath.Join(s.Root, filepath.FromSlash(strings.TrimPrefix(repoPath, "/")))
	if _, err := os.Stat(filepath.Join(dir, ".git")); err != nil {
		http.NotFound(w, r)
		return
	}
	ep, err := transport.NewEndpoint("file://" + filepath.Join(dir, ".git"))
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	sess, err := server.NewServer(server.NewFilesystemLoader(osfs.New("/"))).NewUploadPackSession(ep, nil)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	defer sess.Close()
	if r.Method == http.MethodGet {
		s.advertise(w, r, sess)
		return
	}
	s.uploadPack(w, r, sess)
}

func (s *Server) advertise(w http.ResponseWriter, r *http.Request, sess transport.UploadPackSession) {
	ar, err := sess.AdvertisedReferencesContext(r.Context())
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	if s.SHA1InWant {
		_ = ar.Capabilities.Set(capability.AllowReachableSHA1InWant)
	}
	ar.Prefix = [][]byte{[]byte("# service=git-upload-pack"), pktline.Flush}
	var buf bytes.Buffer
	if err := ar.Encode(&buf); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/x-git-upload-pack-advertisement")
	_, _ = w.Write(buf.Bytes())
}

func (s *Server) uploadPack(w http.ResponseWriter, r *http.Request, sess transport.UploadPackSession) {
	req := packp.NewUploadPackRequest()
	body := io.Reader(r.Body)
	if err := req.Decode(body); err != nil {
		http.Error(w, fmt.Sprintf("decode request: %v", err), http.StatusBadRequest)
		return
	}
	scan := pktline.NewScanner(body)
	for scan.Scan() {
		line := strings.TrimSpace(string(scan.Bytes()))
		if line == "done" {
			break
		}
		if h, ok := strings.CutPrefix(line, "have "); ok {
			req.Haves = append(req.Haves, plumbing.NewHash(h))
		}
	}
	// go-git's upload-pack refuses capabilities it does not implement: shallow, and the one advertised
	// here. A shallow request is answered with the whole history and an empty shallow update, which a
	// shallow client takes.
	req.Capabilities.Delete(capability.AllowReachableSHA1InWant)
	shallow := req.Capabilities.Supports(capability.Shallow)
	if shallow {
		req.Capabilities.Delete(capability.Shallow)
		req.Depth = packp.DepthCommits(0)
	}
	resp, err := sess.UploadPack(r.Context(), req)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	defer resp.Close()
	w.Header().Set("Content-Type", "application/x-git-upload-pack-result")
	if shallow {
		_, _ = w.Write(pktline.FlushPkt)
	}
	_ = resp.Encode(w)
}
