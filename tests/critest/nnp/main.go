// Command nnp is critest's nonewprivs image, rebuilt: installed setuid
// root in the stand-in image (tests/critest/images.sh), it prints the
// effective uid it runs with, 0 unless no_new_privs kept the setuid bit
// from taking effect, as the upstream image's nnp.c does.
package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Printf("Effective uid: %d\n", os.Geteuid())
}
