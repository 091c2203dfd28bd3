package bundle

import (
	"io/fs"
	"path/filepath"
	"testing"

	"github.com/moby/buildkit/frontend/dockerfile/instructions"
)

// TestDockerfilesKeepTheirSources: `make bundle-build` and `make catalog-build` build from the repository
// root, whose .dockerignore keeps only what the operator is built from; each Dockerfile's own
// <Dockerfile>.dockerignore must let through every file it copies.
func TestDockerfilesKeepTheirSources(t *testing.T) {
	root := repoRoot(t)
	for _, file := range []string{"bundle.Dockerfile", "catalog.Dockerfile"} {
		t.Run(file, func(t *testing.T) {
			ignore := dockerignore(t, filepath.Join(root, file+".dockerignore"))
			var sources []string
			for _, stage := range parseDockerfile(t, file) {
				for _, c := range stage.Commands {
					switch c := c.(type) {
					case *instructions.CopyCommand:
						if c.From == "" {
							sources = append(sources, c.SourcePaths...)
						}
					case *instructions.AddCommand:
						sources = append(sources, c.SourcePaths...)
					}
				}
			}
			if len(sources) == 0 {
				t.Fatal("the Dockerfile copies nothing from the build context")
			}
			for _, src := range sources {
				n := 0
				err := filepath.WalkDir(filepath.Join(root, src), func(p string, d fs.DirEntry, err error) error {
					if err != nil || d.IsDir() {
						return err
					}
					rel, err := filepath.Rel(root, p)
					if err != nil {
						return err
					}
					n++
					if excluded, err := ignore.MatchesOrParentMatches(filepath.ToSlash(rel)); err != nil || excluded {
						t.Errorf("%s copies %s, which %s.dockerignore leaves out", file, rel, file)
					}
					return nil
				})
				if err != nil || n == 0 {
					t.Errorf("%s copies %s, which holds no files: %v", file, src, err)
				}
			}
		})
	}
}
