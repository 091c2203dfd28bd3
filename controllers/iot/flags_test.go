package iot

import (
	"flag"
	"strings"
	"testing"
)

// A malformed policy flag is refused by Options with an error that names the flag once.
func TestFlagsNameAMalformedFlagOnce(t *testing.T) {
	options := func(args ...string) error {
		fs := flag.NewFlagSet("operator", flag.ContinueOnError)
		f := BindFlags(fs)
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		_, err := f.Options(1)
		return err
	}
	for _, tt := range []struct{ flag, value string }{
		{FlagFleetPolicy, "team-a"},
		{FlagAllowedRegistries, "bad registry"},
	} {
		err := options("--" + tt.flag + "=" + tt.value)
		if err == nil || strings.Count(err.Error(), "--"+tt.flag) != 1 {
			t.Errorf("--%s=%q: Options error %v, want one naming the flag once", tt.flag, tt.value, err)
		}
	}
	// Control: well-formed values pass.
	if err := options("--"+FlagFleetPolicy+"=team-a=site:lyon", "--"+FlagAllowedRegistries+"=registry.example.com"); err != nil {
		t.Errorf("well-formed flags: %v", err)
	}
}
