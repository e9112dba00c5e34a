// kuma-cp, Kuma's control plane, built from the pinned module
// github.com/kumahq/kuma/v2 (go.mod): the same main as its app/kuma-cp.
package main

import "github.com/kumahq/kuma/v2/app/kuma-cp/cmd"

func main() {
	cmd.Execute()
}
