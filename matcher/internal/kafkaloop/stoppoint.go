package kafkaloop

// stopAfterEnv names the variable that, in a matcher built with the
// killtest tag (proctest.Build(t, pkg, "killtest"); never a shipped
// binary), makes the instance stop its own process inside a transaction:
// the first transaction to end once the instance has committed that many
// input records, and that has produced outputs, flushes them to the log
// and sends SIGSTOP to its process before it ends. A kill test finds the
// process stopped with that transaction open and its outputs written, a
// place it names by a count, and kills it there or lets it go on
// (SIGCONT) instead of racing the stream for such a moment. Binaries
// built without the tag ignore the variable (stoppoint_shipped.go).
const stopAfterEnv = "MATCHER_STOP_AFTER"
