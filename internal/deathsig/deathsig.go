// Package deathsig starts child processes that the kernel signals when this
// process dies, even by SIGKILL, where the system can (Linux's parent-death
// signal): a redis-server of the tests, or the command that redlock run
// supervises, does not outlive the process that owns it.
//
// Linux sends the parent-death signal when the thread that started the child
// exits, not the process, and Go may end threads. So Start starts every child
// from one goroutine locked, for the life of the process, to a thread that
// never exits.
package deathsig
