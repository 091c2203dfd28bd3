package objectstore

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	"github.com/minio/minio-go/v7/pkg/encrypt"
)

// PartSize is the size of each part of a streamed upload. An upload of unknown length holds one part in
// memory at a time, so a Put's memory is about PartSize whatever the stream's length; S3 allows 10,000
// parts, so one upload can be up to 160 GiB.
const PartSize = 16 << 20

var (
	// ErrCredentials is the store refusing the access key pair.
	ErrCredentials = errors.New("the store refused the credentials")
	// ErrNoBucket is a bucket that does not exist.
	ErrNoBucket = errors.New("the bucket does not exist")
	// ErrNotFound is a key that does not exist.
	ErrNotFound = errors.New("no such key")
	// ErrOutsideScope is a key outside the namespace a Scoped handle is for.
	ErrOutsideScope = errors.New("key outside the handle's namespace")
)

// Store is a client of one store, for keys under the configuration's prefix.
type Store struct {
	client *minio.Client
	bucket string
	prefix string
	sse    encrypt.ServerSide
	// secrets are the credential values, removed from every error the store returns.
	secrets []string
}

// New validates cfg and builds a client. It does not contact the store (Check does).
func New(cfg Config) (*Store, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("object store: %w", err)
	}
	ep, _ := parseEndpoint(cfg.Endpoint)
	transport, err := minio.DefaultTransport(ep.secure)
	if err != nil {
		return nil, err
	}
	if len(cfg.CABundle) > 0 {
		pool, _ := certPool(cfg.CABundle)
		transport.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	// Never the environment's proxy: the store is named by the endpoint alone.
	transport.Proxy = nil
	client, err := minio.New(ep.host, &minio.Options{
		Creds:     credentials.NewStaticV4(cfg.Credentials.AccessKeyID, cfg.Credentials.SecretAccessKey, ""),
		Secure:    ep.secure,
		Region:    cfg.Region,
		Transport: transport,
	})
	if err != nil {
		return nil, fmt.Errorf("object store %s: %w", ep.host, err)
	}
	s := &Store{client: client, bucket: cfg.Bucket, prefix: cfg.Prefix,
		secrets: []string{cfg.Credentials.SecretAccessKey, cfg.Credentials.AccessKeyID}}
	if e := cfg.Encryption; e != nil {
		switch e.Mode {
		case SSES3:
			s.sse = encrypt.NewSSE()
		case SSEKMS:
			if s.sse, err = encrypt.NewSSEKMS(e.KMSKeyID, nil); err != nil {
				return nil, fmt.Errorf("object store: SSE-KMS: %w", err)
			}
		}
	}
	return s, nil
}

// Check lists at most one key under the prefix, which proves the bucket exists and the credentials may
// read it. (A listing, not HeadBucket: a HEAD response has no body, so the store cannot say why it failed.)
func (s *Store) Check(ctx context.Context) error {
	return s.probe(ctx, s.prefix)
}

// probe lists at most one key under prefix and returns the store's error, with its code, if any.
func (s *Store) probe(ctx context.Context, prefix string) error {
	// Cancelled on return, so the client's listing goroutine ends after the first entry.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if obj, ok := <-s.client.ListObjects(ctx, s.bucket, minio.ListObjectsOptions{Prefix: prefix, MaxKeys: 1}); ok && obj.Err != nil {
		return s.wrap("list", prefix, obj.Err)
	}
	return nil
}

// notFound explains a 404 of a HEAD request, which carries no error code: it probes with a request that
// does, so that an unknown access key (some stores answer 404) or a missing bucket is not taken for a
// missing key. err is the HEAD's error, already wrapped.
func (s *Store) notFound(ctx context.Context, key string, err error) error {
	if perr := s.probe(ctx, key); perr != nil {
		return perr
	}
	return err
}

// full is key under the store's prefix, after checking it.
func (s *Store) full(key string) (string, error) {
	if err := validKey(key); err != nil {
		return "", err
	}
	if s.prefix == "" {
		return key, nil
	}
	return s.prefix + "/" + key, nil
}

// Put streams r to key as a multipart upload of PartSize parts and returns the bytes written. The object
// appears only when the upload completes: an upload cut short leaves nothing at key (at most parts the
// store discards, or that its lifecycle rule for incomplete uploads removes).
func (s *Store) Put(ctx context.Context, key string, r io.Reader, contentType string) (int64, error) {
	full, err := s.full(key)
	if err != nil {
		return 0, err
	}
	info, err := s.client.PutObject(ctx, s.bucket, full, r, -1, minio.PutObjectOptions{
		PartSize:             PartSize,
		ContentType:          contentType,
		ServerSideEncryption: s.sse,
	})
	if err != nil {
		return 0, s.wrap("put", full, err)
	}
	return info.Size, nil
}

// PutBytes writes a small object in one request.
func (s *Store) PutBytes(ctx context.Context, key string, data []byte, contentType string) error {
	full, err := s.full(key)
	if err != nil {
		return err
	}
	_, err = s.client.PutObject(ctx, s.bucket, full, strings.NewReader(string(data)), int64(len(data)),
		minio.PutObjectOptions{ContentType: contentType, ServerSideEncryption: s.sse, DisableMultipart: true})
	return s.wrap("put", full, err)
}

// Size is the size of the object at key, or ErrNotFound.
func (s *Store) Size(ctx context.Context, key string) (int64, error) {
	full, err := s.full(key)
	if err != nil {
		return 0, err
	}
	info, err := s.client.StatObject(ctx, s.bucket, full, minio.StatObjectOptions{})
	if err != nil {
		if err = s.wrap("stat", full, err); errors.Is(err, ErrNotFound) {
			return 0, s.notFound(ctx, full, err)
		}
		return 0, err
	}
	return info.Size, nil
}

// Get opens the object at key for streaming; the caller closes it. A missing key is ErrNotFound.
func (s *Store) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	full, err := s.full(key)
	if err != nil {
		return nil, err
	}
	obj, err := s.client.GetObject(ctx, s.bucket, full, minio.GetObjectOptions{})
	if err != nil {
		return nil, s.wrap("get", full, err)
	}
	// GetObject is lazy: the first read makes the request, so a missing key or a refused credential shows
	// here, with the store's error code (a GET's error has a body, a HEAD's has not).
	r := &redactingReader{obj: obj, s: s, key: full}
	r.buf = bufio.NewReaderSize(obj, 32<<10)
	if _, err := r.buf.Peek(1); err != nil && err != io.EOF {
		_ = obj.Close()
		return nil, s.wrap("get", full, err)
	}
	return r, nil
}

// Delete removes the object at key; a missing key is not an error.
func (s *Store) Delete(ctx context.Context, key string) error {
	full, err := s.full(key)
	if err != nil {
		return err
	}
	return s.wrap("delete", full, s.client.RemoveObject(ctx, s.bucket, full, minio.RemoveObjectOptions{}))
}

// List returns the keys under prefix (relative to the store's prefix, as given to Put), in the store's
// order (lexical for S3).
func (s *Store) List(ctx context.Context, prefix string) ([]string, error) {
	full, err := s.full(prefix)
	if err != nil {
		return nil, err
	}
	strip := len(full) - len(prefix)
	var keys []string
	for obj := range s.client.ListObjects(ctx, s.bucket, minio.ListObjectsOptions{Prefix: full + "/", Recursive: true}) {
		if obj.Err != nil {
			return nil, s.wrap("list", full, obj.Err)
		}
		keys = append(keys, obj.Key[strip:])
	}
	return keys, nil
}

// wrap turns a client error into one that names the operation, the key and, where the store said so,
// the cause as ErrCredentials, ErrNoBucket or ErrNotFound; credential values are cut from its text.
func (s *Store) wrap(op, key string, err error) error {
	if err == nil {
		return nil
	}
	where := fmt.Sprintf("%s s3://%s/%s", op, s.bucket, key)
	resp := minio.ToErrorResponse(err)
	var kind error
	switch resp.Code {
	// XAdminUserNotFound is versitygw's answer to an access key it does not know.
	case "InvalidAccessKeyId", "XAdminUserNotFound", "SignatureDoesNotMatch", "AccessDenied", "InvalidSecurity", "InvalidToken", "ExpiredToken":
		kind = ErrCredentials
	case "NoSuchBucket":
		kind = ErrNoBucket
	case "NoSuchKey", "NotFound":
		kind = ErrNotFound
	}
	if kind == nil && resp.StatusCode == http.StatusNotFound && key != "" {
		kind = ErrNotFound
	}
	msg := s.redact(err.Error())
	if kind != nil {
		return &storeError{kind: kind, msg: fmt.Sprintf("%s: %v (%s)", where, kind, msg)}
	}
	return &storeError{msg: fmt.Sprintf("%s: %s", where, msg), cause: err}
}

// redact removes the credential values from text.
func (s *Store) redact(text string) string {
	for _, v := range s.secrets {
		if v != "" {
			text = strings.ReplaceAll(text, v, "[redacted]")
		}
	}
	return text
}

// storeError is an error of the store with its text already redacted: Unwrap gives the sentinel kind
// only, never the client's error, whose text could carry what was redacted.
type storeError struct {
	kind  error
	msg   string
	cause error
}

func (e *storeError) Error() string { return e.msg }

func (e *storeError) Unwrap() error {
	if e.kind != nil {
		return e.kind
	}
	// Context cancellation and deadlines stay visible to errors.Is; their text holds nothing secret.
	if errors.Is(e.cause, context.Canceled) {
		return context.Canceled
	}
	if errors.Is(e.cause, context.DeadlineExceeded) {
		return context.DeadlineExceeded
	}
	return nil
}

// redactingReader is an object being read, with its errors passed through wrap.
type redactingReader struct {
	buf *bufio.Reader
	obj *minio.Object
	s   *Store
	key string
}

func (r *redactingReader) Read(p []byte) (int, error) {
	n, err := r.buf.Read(p)
	if err != nil && err != io.EOF {
		err = r.s.wrap("get", r.key, err)
	}
	return n, err
}

func (r *redactingReader) Close() error { return r.obj.Close() }

// CreateBucket makes the configured bucket. The operator never creates buckets (the platform team does);
// tests and the demo do, against their own store.
func (s *Store) CreateBucket(ctx context.Context) error {
	return s.wrap("create bucket", "", s.client.MakeBucket(ctx, s.bucket, minio.MakeBucketOptions{}))
}
