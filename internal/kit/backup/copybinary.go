package backup

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// copyBinary is `platform-operator backup copy-binary DEST`: it copies the running binary to DEST,
// executable. A backup Job's init container runs it in the operator's image, which is distroless (no cp),
// to put the program into an emptyDir the data tool's container (the postgres image) runs it from. The
// copy is written to a temporary name and renamed, so DEST is never a partial binary.
func copyBinary(args []string, stderr io.Writer) int {
	if len(args) != 1 || args[0] == "" {
		fmt.Fprintln(stderr, "usage: platform-operator backup copy-binary DEST")
		return exitUsage
	}
	if err := copyExecutable(args[0]); err != nil {
		fmt.Fprintf(stderr, "backup copy-binary: %v\n", err)
		return exitError
	}
	return exitOK
}

func copyExecutable(dest string) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	in, err := os.Open(self)
	if err != nil {
		return err
	}
	defer in.Close()
	tmp, err := os.CreateTemp(filepath.Dir(dest), ".copy-binary-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // a no-op once renamed
	if _, err := io.Copy(tmp, in); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(0o555); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), dest)
}
