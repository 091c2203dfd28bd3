package fleet

import "testing"

func TestCheckRequest(t *testing.T) {
	alice := Requester{Role: "viewer", Name: "alice"}
	tests := []struct {
		name, subject, reply string
		ok                   bool
	}{
		{"logs to the requester's own reply subject", LogsSubject("d", alice), ReplySubject(alice, "d", "n1"), true},
		{"events to the requester's own reply subject", EventsSubject("d", alice), ReplySubject(alice, "d", "n1"), true},
		{"a JetStream API subject", LogsSubject("d", alice), "$JS.API.STREAM.DELETE.KV_fleet-v2-state", false},
		{"a key", LogsSubject("d", alice), "$KV.fleet-v2-state.shop.web.e", false},
		{"another requester's reply subject", LogsSubject("d", alice), ReplySubject(Requester{"viewer", "bob"}, "d", "n1"), false},
		{"the same name in another role", LogsSubject("d", alice), ReplySubject(Requester{"operator", "alice"}, "d", "n1"), false},
		{"another device", LogsSubject("d", alice), ReplySubject(alice, "e", "n1"), false},
		{"no nonce", LogsSubject("d", alice), ReplyPrefix(alice) + ".d", false},
		{"two nonce tokens", LogsSubject("d", alice), ReplySubject(alice, "d", "n1") + ".x", false},
		{"a wildcard nonce", LogsSubject("d", alice), ReplySubject(alice, "d", "*"), false},
		{"no reply", LogsSubject("d", alice), "", false},
		{"a request to another device", LogsSubject("e", alice), ReplySubject(alice, "d", "n1"), false},
		{"no requester", "fleet.v2.logs.d", ReplySubject(alice, "d", "n1"), false},
		{"three requester tokens", "fleet.v2.logs.d.viewer.alice.x", ReplySubject(alice, "d", "n1"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := CheckRequest("d", tt.subject, tt.reply)
			if (err == nil) != tt.ok {
				t.Errorf("CheckRequest(%q, %q) = %v, %v; want ok %v", tt.subject, tt.reply, r, err, tt.ok)
			}
			if tt.ok && r != alice {
				t.Errorf("requester %v, want %v", r, alice)
			}
		})
	}
}
