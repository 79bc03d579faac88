// Package connalive tells, without blocking and without a round trip,
// whether an idle connection to a Redis server is still open at both ends,
// so that a driver drops a connection the server closed (a restart, CLIENT
// KILL, its timeout) before it fails a call, rather than after; and what a
// call's error says of its connection: the peer closed it (Broken), or a
// deadline passed before the answer (Timeout).
package connalive
