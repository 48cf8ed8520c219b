package vars

import (
	"hash/maphash"
	"math"
)

// dedup keeps the first of structurally equal renders. Hashes bucket the
// candidates; Equal decides, so a collision never merges different renders.
type dedup struct {
	seed maphash.Seed
	hash func(maphash.Seed, any) uint64 // hashValue; replaced in tests
	// first holds the first render per hash; more the rare colliding
	// others, so the common case costs no slice per render.
	first map[uint64]any
	more  map[uint64][]any
}

// newDedup sizes the table for the expected number of renders so a large
// render does not spend its time growing the map.
func newDedup(expected int) *dedup {
	return &dedup{seed: maphash.MakeSeed(), hash: hashValue, first: make(map[uint64]any, min(expected, 1<<20)), more: map[uint64][]any{}}
}

// add records v and reports whether it was new.
func (d *dedup) add(v any) bool {
	h := d.hash(d.seed, v)
	f, ok := d.first[h]
	if !ok {
		d.first[h] = v
		return true
	}
	if Equal(f, v) {
		return false
	}
	for _, o := range d.more[h] {
		if Equal(o, v) {
			return false
		}
	}
	d.more[h] = append(d.more[h], v)
	return true
}

// Type tags keep equal bit patterns of different types apart (5044 vs
// "5044" vs 5044.0).
const (
	tagNil uint64 = iota + 0x51ed270b27fe4b3d
	tagString
	tagBool
	tagInt
	tagUint
	tagFloat
	tagList
	tagMap
)

func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

func hashValue(seed maphash.Seed, v any) uint64 {
	switch x := v.(type) {
	case nil:
		return mix(tagNil)
	case string:
		return mix(maphash.String(seed, x) ^ tagString)
	case bool:
		if x {
			return mix(tagBool + 1)
		}
		return mix(tagBool)
	case int64:
		return mix(uint64(x)^tagInt) ^ tagInt
	case uint64:
		return mix(x^tagUint) ^ tagUint
	case float64:
		if math.IsNaN(x) {
			return mix(tagFloat)
		}
		if x == 0 {
			x = 0 // -0 == 0
		}
		return mix(math.Float64bits(x)^tagFloat) ^ tagFloat
	case []any:
		h := mix(tagList + uint64(len(x)))
		for _, e := range x {
			h = mix(h*31 + hashValue(seed, e))
		}
		return h
	case map[string]any:
		// Order-independent: maps iterate randomly.
		var sum uint64
		for k, e := range x {
			sum += mix(maphash.String(seed, k) ^ (hashValue(seed, e) * 0x9e3779b97f4a7c15))
		}
		return mix(sum ^ tagMap ^ uint64(len(x)))
	default:
		return 0
	}
}
