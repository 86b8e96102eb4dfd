// Command hello prints its greeting: the program proctest's tests build,
// with the build tag loud or without.
package main

import "fmt"

func main() { fmt.Println(greeting) }
