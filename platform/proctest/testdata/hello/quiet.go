//go:build !loud

package main

const greeting = "hello from a built binary"
