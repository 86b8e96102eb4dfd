// Command hello prints its greeting: the program proctest's tests build.
package main

import "fmt"

func main() { fmt.Println("hello from a built binary") }
