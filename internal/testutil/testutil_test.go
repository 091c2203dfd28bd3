package testutil

import (
	"errors"
	"testing"
)

// recorder is a testing.TB that notes a failure instead of ending the test.
type recorder struct {
	testing.TB
	failed bool
}

func (r *recorder) Helper()               {}
func (r *recorder) Fatal(...any)          { r.failed = true }
func (r *recorder) Fatalf(string, ...any) { r.failed = true }

func TestWantError(t *testing.T) {
	tests := []struct {
		name       string
		err        error
		want       string
		wantFailed bool
		wantWanted bool
	}{
		{name: "no error wanted, none", err: nil, want: ""},
		{name: "no error wanted, one", err: errors.New("boom"), want: "", wantFailed: true},
		{name: "an error wanted, none", err: nil, want: "boom", wantFailed: true, wantWanted: true},
		{name: "an error wanted, it", err: errors.New("a boom here"), want: "boom", wantWanted: true},
		{name: "an error wanted, another", err: errors.New("bang"), want: "boom", wantFailed: true, wantWanted: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &recorder{TB: t}
			if wanted := WantError(r, tt.err, tt.want); wanted != tt.wantWanted {
				t.Errorf("WantError = %v, want %v", wanted, tt.wantWanted)
			}
			if r.failed != tt.wantFailed {
				t.Errorf("failed = %v, want %v", r.failed, tt.wantFailed)
			}
		})
	}
}
