/*
 * phxfile.h — upstream Phoenix's frozen phxFile* ABI, as LMCache's Phoenix
 * backend calls it; served by the same library as the cuFile interface.
 *
 * Every function returns 0 or a negative errno. A file handle is the file
 * descriptor itself, boxed into a pointer. Buffers are device memory (or host
 * memory) of any length and alignment. ReadAsync/WriteAsync take hipFile's
 * argument order (file offset before buffer offset); all four cells are read
 * when the stream reaches the operation and must stay valid until then, and
 * a failed transfer is reported in *bytes_done (-errno), never by the return.
 */
#ifndef PHX_PHXFILE_H
#define PHX_PHXFILE_H
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

int phxFileDriverOpen(void);
/* Drops every buffer registration made through this interface. */
int phxFileDriverClose(void);
int phxFileBufRegister(const void *addr, size_t length);
int phxFileBufDeregister(const void *addr);
int phxFileHandleRegister(void **fh, int fd);
int phxFileHandleDeregister(void *fh);
/* Accepted for parity; every operation carries its stream. */
int phxFileStreamRegister(void *stream);
int phxFileStreamDeregister(void *stream);
int phxFileReadAsync(void *fh, void *buf_base, size_t *nbytes, int64_t *file_offset, int64_t *buf_offset,
                     int64_t *bytes_done, void *stream);
int phxFileWriteAsync(void *fh, void *buf_base, size_t *nbytes, int64_t *file_offset, int64_t *buf_offset,
                      int64_t *bytes_done, void *stream);

#ifdef __cplusplus
}
#endif
#endif
