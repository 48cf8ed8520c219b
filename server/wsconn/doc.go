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
// It speaks what OpAMP needs: binary messages (fragmented or not),
// ping/pong and close; no extensions and no subprotocols.
package wsconn
