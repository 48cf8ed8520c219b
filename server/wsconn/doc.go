// Package wsconn is myriarchd's server side of RFC 6455 WebSockets, built
// for very many mostly idle connections. opamp-go (like most Go WebSocket
// servers) reads every socket on its own goroutine, whose stack grows to
// 8 KiB and never shrinks back while it waits: most of what an idle agent
// costs. Here, on Linux, one epoll instance watches every plain-TCP socket and
// a fixed pool of workers reads only the sockets that have data, so an idle
// agent costs its socket and a small Conn. Other systems, and TLS (whose
// records cannot be read without blocking), use a goroutine per connection
// with the same frame reader.
//
// It speaks what OpAMP needs: binary messages (fragmented or not),
// ping/pong and close; no extensions and no subprotocols.
package wsconn
