package source

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"errors"
	"testing"
)

// pack builds a pack file's bytes (without the trailing checksum, which checkPack does not read).
type pack struct{ bytes.Buffer }

func newPack(count uint32) *pack {
	p := &pack{}
	p.WriteString("PACK")
	_ = binary.Write(p, binary.BigEndian, uint32(2))
	_ = binary.Write(p, binary.BigEndian, count)
	return p
}

// object appends an object header of type typ declaring size, then extra (an OFS delta's offset), then
// content compressed. It returns the object's offset.
func (p *pack) object(typ byte, size uint64, extra []byte, content []byte) int {
	at := p.Len()
	b := typ<<4 | byte(size&0x0f)
	size >>= 4
	for size > 0 {
		p.WriteByte(b | 0x80)
		b = byte(size & 0x7f)
		size >>= 7
	}
	p.WriteByte(b)
	p.Write(extra)
	z := zlib.NewWriter(p)
	_, _ = z.Write(content)
	_ = z.Close()
	return at
}

// delta is delta data that turns a base of base bytes into target bytes (copy instructions left out:
// checkPack reads the sizes only).
func delta(base, target uint64) []byte {
	return binary.AppendUvarint(binary.AppendUvarint(nil, base), target)
}

func TestCheckPack(t *testing.T) {
	const blob, ofsDelta = 3, 6
	content := []byte("0123456789")
	tests := []struct {
		name    string
		pack    func() *pack
		tooBig  bool
		wantErr string
	}{
		{name: "small objects", pack: func() *pack {
			p := newPack(2)
			at := p.object(blob, uint64(len(content)), nil, content)
			d := delta(10, 20)
			p.object(ofsDelta, uint64(len(d)), []byte{byte(p.Len() - at)}, d)
			return p
		}},
		{name: "object declared beyond the limit", tooBig: true, wantErr: "more than 64 MiB", pack: func() *pack {
			p := newPack(2)
			p.object(blob, MaxObjectBytes+1, nil, content)
			p.object(blob, uint64(len(content)), nil, content)
			return p
		}},
		{name: "object at the limit", pack: func() *pack {
			p := newPack(1)
			p.object(blob, MaxObjectBytes, nil, content)
			return p
		}},
		{name: "delta whose result is beyond the limit", tooBig: true, wantErr: "more than 64 MiB", pack: func() *pack {
			p := newPack(2)
			at := p.object(blob, uint64(len(content)), nil, content)
			d := delta(10, MaxObjectBytes+1)
			p.object(ofsDelta, uint64(len(d)), []byte{byte(p.Len() - at)}, d)
			return p
		}},
		{name: "too many objects", tooBig: true, wantErr: "more than 500000", pack: func() *pack {
			return newPack(MaxObjects + 1)
		}},
		{name: "delta without sizes", wantErr: "invalid delta header", pack: func() *pack {
			p := newPack(2)
			at := p.object(blob, uint64(len(content)), nil, content)
			p.object(ofsDelta, 1, []byte{byte(p.Len() - at)}, []byte{0x80})
			return p
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := checkPack(bytes.NewReader(tt.pack().Bytes()))
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("checkPack = %v, want nil", err)
				}
				return
			}
			if err == nil || !bytes.Contains([]byte(err.Error()), []byte(tt.wantErr)) || errors.Is(err, ErrTooLarge) != tt.tooBig {
				t.Fatalf("checkPack = %v, want an error containing %q (ErrTooLarge: %v)", err, tt.wantErr, tt.tooBig)
			}
		})
	}
}
