package backup

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestCompareTOC: the TABLE DATA entries of a pg_restore -l listing against the facts' tables, names with
// spaces and quotes included; each case that should fail differs from a passing one by one entry.
func TestCompareTOC(t *testing.T) {
	listing := `;
; Archive created at 2026-11-28 16:30:00 UTC
;     dbname: shop
;
; Selected TOC Entries:
;
216; 1259 16386 TABLE public items postgres
3350; 0 16386 TABLE DATA public items postgres
3351; 0 16400 TABLE DATA Sales Dept Order "Lines" postgres
3352; 0 16410 TABLE DATA public empty_table postgres
3353; 0 0 SEQUENCE SET public items_id_seq postgres
`
	facts := []PgTable{{Schema: "public", Name: "items"}, {Schema: "Sales Dept", Name: `Order "Lines"`}, {Schema: "public", Name: "empty_table"}}
	tests := []struct {
		name    string
		listing string
		tables  []PgTable
		wantErr string
	}{
		{"equal", listing, facts, ""},
		{"a table without data in the dump", strings.Replace(listing, "3352; 0 16410 TABLE DATA public empty_table postgres\n", "", 1), facts, "empty_table"},
		{"data of a table the facts do not name", listing + "3354; 0 16420 TABLE DATA public secrets postgres\n", facts, "secrets"},
		{"the same table twice", listing + "3355; 0 16386 TABLE DATA public items postgres\n", facts, "items"},
		{"a prefix is not the table", strings.Replace(listing, "public items postgres\n3351", "public items_old postgres\n3351", 1), facts, "items_old"},
		{"an empty database", ";\n", nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := compareTOC(tt.listing, tt.tables)
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("compareTOC: %v, want an error naming %q", err, tt.wantErr)
			}
		})
	}
}

// TestEncodeResult: a result fits a termination message (4096 bytes) whatever its message, and stays JSON.
func TestEncodeResult(t *testing.T) {
	for _, n := range []int{0, 100, 4096, 100000} {
		doc := encodeResult(VerifyResult{Result: ResultFailed, Reason: ReasonRestoreFailed, Message: strings.Repeat("é\"", n)})
		var r VerifyResult
		if len(doc) > maxResult || json.Unmarshal(doc, &r) != nil || r.Reason != ReasonRestoreFailed {
			t.Fatalf("message of %d: %d bytes %s", n, len(doc), doc[:min(len(doc), 80)])
		}
	}
}

// TestLibpqTarget: the password leaves the URL given to pg_restore's command line, wherever it is written.
func TestLibpqTarget(t *testing.T) {
	for _, raw := range []string{
		"postgresql://u:s3cret@127.0.0.1:5432/scratch?sslmode=disable",
		"postgres://u@127.0.0.1/scratch?password=s3cret&sslmode=disable",
	} {
		target, pw, err := libpqTarget(raw)
		if err != nil || pw != "s3cret" || strings.Contains(target, "s3cret") || !strings.Contains(target, "scratch") {
			t.Fatalf("%s: %q %q %v", raw, target, pw, err)
		}
	}
	if _, _, err := libpqTarget("host=127.0.0.1 password=s3cret"); err == nil || strings.Contains(err.Error(), "s3cret") {
		t.Fatalf("keyword form: %v", err)
	}
}
