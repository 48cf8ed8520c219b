package accounts

import (
	"strings"
	"testing"
)

func TestPasswordHash(t *testing.T) {
	phc := HashPassword("correct horse battery")
	if !strings.HasPrefix(phc, "$argon2id$v=19$m=19456,t=2,p=1$") {
		t.Fatalf("hash %s", phc)
	}
	if ok, err := CheckPassword(phc, "correct horse battery"); !ok || err != nil {
		t.Fatalf("the right password: %v %v", ok, err)
	}
	if ok, _ := CheckPassword(phc, "correct horse batterz"); ok {
		t.Fatal("a wrong password matches")
	}
	if HashPassword("correct horse battery") == phc {
		t.Fatal("two hashes of one password are equal: no salt")
	}
	for _, bad := range []string{"", "plain", "$argon2i$v=19$m=1,t=1,p=1$c2FsdA$a2V5", "$argon2id$v=19$m=99999999,t=1,p=1$c2FsdA$a2V5",
		"$argon2id$v=19$m=19456,t=2,p=1$!!$a2V5"} {
		if _, err := CheckPassword(bad, "x"); err == nil {
			t.Errorf("%q read as a hash", bad)
		}
	}
}

// BenchmarkCheckPassword is the time of one sign-in's password check.
func BenchmarkCheckPassword(b *testing.B) {
	phc := HashPassword("correct horse battery")
	for b.Loop() {
		if ok, _ := CheckPassword(phc, "correct horse battery"); !ok {
			b.Fatal("no match")
		}
	}
}
