package catalyst

import (
	"net"
	"strings"

	catalystv1 "github.com/platform-operator/platform-operator/api/catalyst/v1alpha1"
)

// ImageRepository is the repository a Project's images are pushed to inside its registry:
// spec.build.repository, or <Project namespace>/<Project name> when that is empty. Both parts are DNS
// labels, so the default is always a valid repository path.
func ImageRepository(p *catalystv1.Project) string {
	if b := p.Spec.Build; b != nil && b.Repository != "" {
		return b.Repository
	}
	return p.Namespace + "/" + p.Name
}

// ImageReference is the image of a Project's commit, <registry>/<repository>:<commit>: the tag is the
// commit id exactly as spec.source.commitSha holds it. Empty when the Project has no spec.build.
func ImageReference(p *catalystv1.Project, commit string) string {
	if p.Spec.Build == nil || commit == "" {
		return ""
	}
	return p.Spec.Build.Registry + "/" + ImageRepository(p) + ":" + commit
}

// FullCommit says whether commit is a whole commit id (40 hexadecimal digits for SHA-1, 64 for SHA-256)
// rather than an abbreviation: the builder can check out only a whole one.
func FullCommit(commit string) bool {
	return len(commit) == 40 || len(commit) == 64
}

// PlainHTTP says whether registry (host or host:port) is spoken to over plain http: a loopback host
// (localhost, 127.0.0.0/8, ::1), or one listed in insecure, either as host:port or as a bare host
// (which covers every port). Every other registry is spoken to over https only.
func PlainHTTP(registry string, insecure []string) bool {
	host := registry
	if h, _, err := net.SplitHostPort(registry); err == nil {
		host = h
	}
	host = strings.ToLower(strings.Trim(host, "[]"))
	if host == "localhost" {
		return true
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return true
	}
	for _, r := range insecure {
		r = strings.ToLower(strings.TrimSpace(r))
		if r != "" && (r == strings.ToLower(registry) || r == host) {
			return true
		}
	}
	return false
}

// BuilderImage is the builder image the operator's flag defaults to: relatedImage (RELATED_IMAGE_KANIKO,
// which OLM and disconnected mirrors rewrite) when set, else DefaultBuilderImage.
func BuilderImage(relatedImage string) string {
	if relatedImage = strings.TrimSpace(relatedImage); relatedImage != "" {
		return relatedImage
	}
	return DefaultBuilderImage
}

// SplitRegistries reads --catalyst-insecure-registries: registries separated by commas, blanks dropped.
func SplitRegistries(s string) []string {
	var out []string
	for r := range strings.SplitSeq(s, ",") {
		if r = strings.TrimSpace(r); r != "" {
			out = append(out, r)
		}
	}
	return out
}
