package catalyst

import "github.com/platform-operator/platform-operator/internal/catalyst/render"

// The manager runs in this test binary, so a render's child process is this binary too: it renders
// instead of testing when started as one (as main.go does in the operator).
func init() { render.MaybeChild() }
