/* SPDX-License-Identifier: MIT */
/*
 * The parts of NVIDIA's nv-p2p ABI phxfs uses, declared from the documented interface of
 * open-gpu-kernel-modules (kernel-open/nvidia/nv-p2p.h), so the nvidia backend compiles
 * without the driver's sources. Layouts must match the driver's: only the fields used here
 * are read, through the version-checked page table the driver hands out.
 */
#ifndef PHXFS_NV_P2P_H
#define PHXFS_NV_P2P_H
#include <linux/types.h>

#define NVIDIA_P2P_PAGE_TABLE_VERSION 0x00010002
#define NVIDIA_P2P_PAGE_TABLE_VERSION_COMPATIBLE(p) \
	((((p)->version) & 0xffff0000) == ((NVIDIA_P2P_PAGE_TABLE_VERSION) & 0xffff0000))

enum nvidia_p2p_page_size_type {
	NVIDIA_P2P_PAGE_SIZE_4KB = 0,
	NVIDIA_P2P_PAGE_SIZE_64KB,
	NVIDIA_P2P_PAGE_SIZE_128KB,
	NVIDIA_P2P_PAGE_SIZE_COUNT
};

typedef struct nvidia_p2p_page {
	u64 physical_address;
	union nvidia_p2p_request_registers {
		struct {
			u32 wreqmb_h;
			u32 rreqmb_h;
			u32 rreqmb_0;
			u32 reserved[3];
		} fermi;
	} registers;
} nvidia_p2p_page_t;

typedef struct nvidia_p2p_page_table {
	u32 version;
	u32 page_size; /* enum nvidia_p2p_page_size_type */
	struct nvidia_p2p_page **pages;
	u32 entries;
	u8 *gpu_uuid;
} nvidia_p2p_page_table_t;

/* va and length 64 KiB aligned; free_callback is mandatory and runs when the driver takes the
 * memory back (cudaFree, process exit): the table is then the driver's to free, through
 * nvidia_p2p_free_page_table from inside the callback. */
int nvidia_p2p_get_pages(u64 p2p_token, u32 va_space, u64 virtual_address, u64 length,
			 struct nvidia_p2p_page_table **page_table,
			 void (*free_callback)(void *data), void *data);
int nvidia_p2p_put_pages(u64 p2p_token, u32 va_space, u64 virtual_address,
			 struct nvidia_p2p_page_table *page_table);
int nvidia_p2p_free_page_table(struct nvidia_p2p_page_table *page_table);
#endif
