// Package wsconn is myriarchd's server side of RFC 6455 WebSockets, built
// for very many mostly idle connections. opamp-go (like most Go WebSocket
// servers) reads every socket on its own goroutine, whose stack grows to
// 8 KiB and never shrinks back while it waits: most of what an idle agent
// costs. Here, on Linux, one epoll instance watches every agent socket,
// armed one-shot, and a fixed pool of workers reads only the sockets that
// have data, so an idle agent costs its socket and a small Conn.
//
// TLS sessions are read by the same workers when the listener was wrapped
// by NewListener below tls.NewListener: once the poller takes a connection
// over, reads of the TCP socket underneath become non-blocking and return a
// temporary net.Error when nothing has arrived, which crypto/tls survives
// with its partial record kept. A worker reads a TLS session until its
// socket would block (records already decrypted and buffered inside
// crypto/tls are invisible to epoll), then re-arms it. TLS connections not
// accepted through NewListener, and every connection on systems without
// epoll, are read on a goroutine each with the same frame reader.
//
// Writes are queued per connection and written by a goroutine that lives
// only while something is queued (see writer.go), so a peer that stops
// reading never holds a worker. A message that has begun to arrive must
// finish in bounded time and at a minimum rate, and the bytes of unfinished
// messages of all connections are bounded together (see limits.go).
//
// It speaks what OpAMP needs: binary messages (fragmented or not),
// ping/pong and close; no extensions and no subprotocols. Close frames
// from peers are checked (RFC 6455 §5.5.1, §7.4): a 1-byte payload or a
// reserved code is answered with 1002, a reason that is not UTF-8 with 1007.
package wsconn
