package opampsrv

import (
	"bufio"
	"net"
	"net/http"
)

// Buffer sizes of an upgraded WebSocket. opamp-go's Upgrader keeps the
// buffers net/http used for the handshake (4 KiB each way) for the life of
// the connection: 8 KiB per agent that sends a few hundred bytes every 30 s.
// Smaller buffers only mean more read calls for large messages, and outgoing
// messages larger than the write buffer go out as several WebSocket frames
// of one message, which every client reassembles.
const (
	wsReadBuffer  = 512  // gorilla reuses the hijacked reader only above 256 bytes
	wsWriteBuffer = 1024 // and the hijacked writer only from 270 bytes
)

// smallBuffers hands the WebSocket upgrader small buffers at Hijack.
type smallBuffers struct {
	http.ResponseWriter
}

func (w smallBuffers) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	h, ok := w.ResponseWriter.(http.Hijacker)
	if !ok {
		return nil, nil, http.ErrNotSupported
	}
	c, brw, err := h.Hijack()
	if err != nil || brw.Reader.Buffered() > 0 {
		return c, brw, err // bytes already read stay with their reader
	}
	return c, bufio.NewReadWriter(bufio.NewReaderSize(c, wsReadBuffer), bufio.NewWriterSize(c, wsWriteBuffer)), nil
}
