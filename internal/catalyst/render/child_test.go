package render

// A render's child process is this test binary: it renders instead of testing when started as one.
func init() { MaybeChild() }
