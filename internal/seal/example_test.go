package seal_test

import (
	"fmt"
	"strings"

	"github.com/jobscheduler/scheduler/internal/seal"
)

func ExampleSealer() {
	key, err := seal.ParseKey(seal.GenerateKey())
	if err != nil {
		panic(err)
	}
	s, err := seal.New(key)
	if err != nil {
		panic(err)
	}
	const aad = "j.sub.rg.coll.job" // the job's KV key
	sealed := s.Seal([]byte("sv=2015&sig=secret"), aad)
	fmt.Println(strings.HasPrefix(sealed, "sealed:v2:"), strings.Contains(sealed, "secret"))

	plain, err := s.Open(sealed, aad)
	fmt.Println(string(plain), err)

	_, err = s.Open(sealed, "j.sub.rg.coll.other")
	fmt.Println(err)
	// Output:
	// true false
	// sv=2015&sig=secret <nil>
	// sealed value cannot be opened: other key, other additional data, or tampered
}
