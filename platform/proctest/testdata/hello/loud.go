//go:build loud

package main

const greeting = "HELLO FROM A BUILT BINARY"
