/*
 * papiStdEventDefs.h: PAPI 7's preset event codes, from the pmc project's
 * pmc-papi crate (libpapi/). Same names and values as PAPI's header: a
 * preset is its index in this list with PAPI_PRESET_MASK set. What each
 * preset counts on this machine: papi_avail, or PAPI_get_event_info.
 */
#ifndef _PAPISTDEVENTDEFS
#define _PAPISTDEVENTDEFS

/* Event code classes: presets have the high bit set, native events the next. */
#define PAPI_PRESET_MASK     ((int)0x80000000)
#define PAPI_NATIVE_MASK     ((int)0x40000000)
#define PAPI_UE_MASK         ((int)0xC0000000)
#define PAPI_PRESET_AND_MASK 0x7FFFFFFF
#define PAPI_NATIVE_AND_MASK 0xBFFFFFFF
#define PAPI_UE_AND_MASK     0x3FFFFFFF

#define PAPI_MAX_PRESET_EVENTS 128
#define PAPI_MAX_USER_EVENTS 50
#define USER_EVENT_OPERATION_LEN 512

/* Preset indices, consecutive from 0. */
enum
{
	PAPI_L1_DCM_idx = 0,	/* Level 1 data cache misses */
	PAPI_L1_ICM_idx,	/* Level 1 instruction cache misses */
	PAPI_L2_DCM_idx,	/* Level 2 data cache misses */
	PAPI_L2_ICM_idx,	/* Level 2 instruction cache misses */
	PAPI_L3_DCM_idx,	/* Level 3 data cache misses */
	PAPI_L3_ICM_idx,	/* Level 3 instruction cache misses */
	PAPI_L1_TCM_idx,	/* Level 1 cache misses */
	PAPI_L2_TCM_idx,	/* Level 2 cache misses */
	PAPI_L3_TCM_idx,	/* Level 3 cache misses */
	PAPI_CA_SNP_idx,	/* Requests for a snoop */
	PAPI_CA_SHR_idx,	/* Requests for exclusive access to shared cache line */
	PAPI_CA_CLN_idx,	/* Requests for exclusive access to clean cache line */
	PAPI_CA_INV_idx,	/* Requests for cache line invalidation */
	PAPI_CA_ITV_idx,	/* Requests for cache line intervention */
	PAPI_L3_LDM_idx,	/* Level 3 load misses */
	PAPI_L3_STM_idx,	/* Level 3 store misses */
	PAPI_BRU_IDL_idx,	/* Cycles branch units are idle */
	PAPI_FXU_IDL_idx,	/* Cycles integer units are idle */
	PAPI_FPU_IDL_idx,	/* Cycles floating point units are idle */
	PAPI_LSU_IDL_idx,	/* Cycles load/store units are idle */
	PAPI_TLB_DM_idx,	/* Data translation lookaside buffer misses */
	PAPI_TLB_IM_idx,	/* Instruction translation lookaside buffer misses */
	PAPI_TLB_TL_idx,	/* Total translation lookaside buffer misses */
	PAPI_L1_LDM_idx,	/* Level 1 load misses */
	PAPI_L1_STM_idx,	/* Level 1 store misses */
	PAPI_L2_LDM_idx,	/* Level 2 load misses */
	PAPI_L2_STM_idx,	/* Level 2 store misses */
	PAPI_BTAC_M_idx,	/* Branch target address cache misses */
	PAPI_PRF_DM_idx,	/* Data prefetch cache misses */
	PAPI_L3_DCH_idx,	/* Level 3 data cache hits */
	PAPI_TLB_SD_idx,	/* Translation lookaside buffer shootdowns */
	PAPI_CSR_FAL_idx,	/* Failed store conditional instructions */
	PAPI_CSR_SUC_idx,	/* Successful store conditional instructions */
	PAPI_CSR_TOT_idx,	/* Total store conditional instructions */
	PAPI_MEM_SCY_idx,	/* Cycles Stalled Waiting for memory accesses */
	PAPI_MEM_RCY_idx,	/* Cycles Stalled Waiting for memory Reads */
	PAPI_MEM_WCY_idx,	/* Cycles Stalled Waiting for memory writes */
	PAPI_STL_ICY_idx,	/* Cycles with no instruction issue */
	PAPI_FUL_ICY_idx,	/* Cycles with maximum instruction issue */
	PAPI_STL_CCY_idx,	/* Cycles with no instructions completed */
	PAPI_FUL_CCY_idx,	/* Cycles with maximum instructions completed */
	PAPI_HW_INT_idx,	/* Hardware interrupts */
	PAPI_BR_UCN_idx,	/* Unconditional branch instructions */
	PAPI_BR_CN_idx,	/* Conditional branch instructions */
	PAPI_BR_TKN_idx,	/* Conditional branch instructions taken */
	PAPI_BR_NTK_idx,	/* Conditional branch instructions not taken */
	PAPI_BR_MSP_idx,	/* Conditional branch instructions mispredicted */
	PAPI_BR_PRC_idx,	/* Conditional branch instructions correctly predicted */
	PAPI_FMA_INS_idx,	/* FMA instructions completed */
	PAPI_TOT_IIS_idx,	/* Instructions issued */
	PAPI_TOT_INS_idx,	/* Instructions completed */
	PAPI_INT_INS_idx,	/* Integer instructions */
	PAPI_FP_INS_idx,	/* Floating point instructions */
	PAPI_LD_INS_idx,	/* Load instructions */
	PAPI_SR_INS_idx,	/* Store instructions */
	PAPI_BR_INS_idx,	/* Branch instructions */
	PAPI_VEC_INS_idx,	/* Vector/SIMD instructions (could include integer) */
	PAPI_RES_STL_idx,	/* Cycles stalled on any resource */
	PAPI_FP_STAL_idx,	/* Cycles the FP unit(s) are stalled */
	PAPI_TOT_CYC_idx,	/* Total cycles */
	PAPI_LST_INS_idx,	/* Load/store instructions completed */
	PAPI_SYC_INS_idx,	/* Synchronization instructions completed */
	PAPI_L1_DCH_idx,	/* Level 1 data cache hits */
	PAPI_L2_DCH_idx,	/* Level 2 data cache hits */
	PAPI_L1_DCA_idx,	/* Level 1 data cache accesses */
	PAPI_L2_DCA_idx,	/* Level 2 data cache accesses */
	PAPI_L3_DCA_idx,	/* Level 3 data cache accesses */
	PAPI_L1_DCR_idx,	/* Level 1 data cache reads */
	PAPI_L2_DCR_idx,	/* Level 2 data cache reads */
	PAPI_L3_DCR_idx,	/* Level 3 data cache reads */
	PAPI_L1_DCW_idx,	/* Level 1 data cache writes */
	PAPI_L2_DCW_idx,	/* Level 2 data cache writes */
	PAPI_L3_DCW_idx,	/* Level 3 data cache writes */
	PAPI_L1_ICH_idx,	/* Level 1 instruction cache hits */
	PAPI_L2_ICH_idx,	/* Level 2 instruction cache hits */
	PAPI_L3_ICH_idx,	/* Level 3 instruction cache hits */
	PAPI_L1_ICA_idx,	/* Level 1 instruction cache accesses */
	PAPI_L2_ICA_idx,	/* Level 2 instruction cache accesses */
	PAPI_L3_ICA_idx,	/* Level 3 instruction cache accesses */
	PAPI_L1_ICR_idx,	/* Level 1 instruction cache reads */
	PAPI_L2_ICR_idx,	/* Level 2 instruction cache reads */
	PAPI_L3_ICR_idx,	/* Level 3 instruction cache reads */
	PAPI_L1_ICW_idx,	/* Level 1 instruction cache writes */
	PAPI_L2_ICW_idx,	/* Level 2 instruction cache writes */
	PAPI_L3_ICW_idx,	/* Level 3 instruction cache writes */
	PAPI_L1_TCH_idx,	/* Level 1 total cache hits */
	PAPI_L2_TCH_idx,	/* Level 2 total cache hits */
	PAPI_L3_TCH_idx,	/* Level 3 total cache hits */
	PAPI_L1_TCA_idx,	/* Level 1 total cache accesses */
	PAPI_L2_TCA_idx,	/* Level 2 total cache accesses */
	PAPI_L3_TCA_idx,	/* Level 3 total cache accesses */
	PAPI_L1_TCR_idx,	/* Level 1 total cache reads */
	PAPI_L2_TCR_idx,	/* Level 2 total cache reads */
	PAPI_L3_TCR_idx,	/* Level 3 total cache reads */
	PAPI_L1_TCW_idx,	/* Level 1 total cache writes */
	PAPI_L2_TCW_idx,	/* Level 2 total cache writes */
	PAPI_L3_TCW_idx,	/* Level 3 total cache writes */
	PAPI_FML_INS_idx,	/* Floating point multiply instructions */
	PAPI_FAD_INS_idx,	/* Floating point add instructions */
	PAPI_FDV_INS_idx,	/* Floating point divide instructions */
	PAPI_FSQ_INS_idx,	/* Floating point square root instructions */
	PAPI_FNV_INS_idx,	/* Floating point inverse instructions */
	PAPI_FP_OPS_idx,	/* Floating point operations */
	PAPI_SP_OPS_idx,	/* Floating point operations; optimized to count scaled single precision vector operations */
	PAPI_DP_OPS_idx,	/* Floating point operations; optimized to count scaled double precision vector operations */
	PAPI_VEC_SP_idx,	/* Single precision vector/SIMD instructions */
	PAPI_VEC_DP_idx,	/* Double precision vector/SIMD instructions */
	PAPI_REF_CYC_idx,	/* Reference clock cycles */
	PAPI_END_idx	/* the number of presets */
};

#define PAPI_L1_DCM  (PAPI_L1_DCM_idx | PAPI_PRESET_MASK)
#define PAPI_L1_ICM  (PAPI_L1_ICM_idx | PAPI_PRESET_MASK)
#define PAPI_L2_DCM  (PAPI_L2_DCM_idx | PAPI_PRESET_MASK)
#define PAPI_L2_ICM  (PAPI_L2_ICM_idx | PAPI_PRESET_MASK)
#define PAPI_L3_DCM  (PAPI_L3_DCM_idx | PAPI_PRESET_MASK)
#define PAPI_L3_ICM  (PAPI_L3_ICM_idx | PAPI_PRESET_MASK)
#define PAPI_L1_TCM  (PAPI_L1_TCM_idx | PAPI_PRESET_MASK)
#define PAPI_L2_TCM  (PAPI_L2_TCM_idx | PAPI_PRESET_MASK)
#define PAPI_L3_TCM  (PAPI_L3_TCM_idx | PAPI_PRESET_MASK)
#define PAPI_CA_SNP  (PAPI_CA_SNP_idx | PAPI_PRESET_MASK)
#define PAPI_CA_SHR  (PAPI_CA_SHR_idx | PAPI_PRESET_MASK)
#define PAPI_CA_CLN  (PAPI_CA_CLN_idx | PAPI_PRESET_MASK)
#define PAPI_CA_INV  (PAPI_CA_INV_idx | PAPI_PRESET_MASK)
#define PAPI_CA_ITV  (PAPI_CA_ITV_idx | PAPI_PRESET_MASK)
#define PAPI_L3_LDM  (PAPI_L3_LDM_idx | PAPI_PRESET_MASK)
#define PAPI_L3_STM  (PAPI_L3_STM_idx | PAPI_PRESET_MASK)
#define PAPI_BRU_IDL (PAPI_BRU_IDL_idx | PAPI_PRESET_MASK)
#define PAPI_FXU_IDL (PAPI_FXU_IDL_idx | PAPI_PRESET_MASK)
#define PAPI_FPU_IDL (PAPI_FPU_IDL_idx | PAPI_PRESET_MASK)
#define PAPI_LSU_IDL (PAPI_LSU_IDL_idx | PAPI_PRESET_MASK)
#define PAPI_TLB_DM  (PAPI_TLB_DM_idx | PAPI_PRESET_MASK)
#define PAPI_TLB_IM  (PAPI_TLB_IM_idx | PAPI_PRESET_MASK)
#define PAPI_TLB_TL  (PAPI_TLB_TL_idx | PAPI_PRESET_MASK)
#define PAPI_L1_LDM  (PAPI_L1_LDM_idx | PAPI_PRESET_MASK)
#define PAPI_L1_STM  (PAPI_L1_STM_idx | PAPI_PRESET_MASK)
#define PAPI_L2_LDM  (PAPI_L2_LDM_idx | PAPI_PRESET_MASK)
#define PAPI_L2_STM  (PAPI_L2_STM_idx | PAPI_PRESET_MASK)
#define PAPI_BTAC_M  (PAPI_BTAC_M_idx | PAPI_PRESET_MASK)
#define PAPI_PRF_DM  (PAPI_PRF_DM_idx | PAPI_PRESET_MASK)
#define PAPI_L3_DCH  (PAPI_L3_DCH_idx | PAPI_PRESET_MASK)
#define PAPI_TLB_SD  (PAPI_TLB_SD_idx | PAPI_PRESET_MASK)
#define PAPI_CSR_FAL (PAPI_CSR_FAL_idx | PAPI_PRESET_MASK)
#define PAPI_CSR_SUC (PAPI_CSR_SUC_idx | PAPI_PRESET_MASK)
#define PAPI_CSR_TOT (PAPI_CSR_TOT_idx | PAPI_PRESET_MASK)
#define PAPI_MEM_SCY (PAPI_MEM_SCY_idx | PAPI_PRESET_MASK)
#define PAPI_MEM_RCY (PAPI_MEM_RCY_idx | PAPI_PRESET_MASK)
#define PAPI_MEM_WCY (PAPI_MEM_WCY_idx | PAPI_PRESET_MASK)
#define PAPI_STL_ICY (PAPI_STL_ICY_idx | PAPI_PRESET_MASK)
#define PAPI_FUL_ICY (PAPI_FUL_ICY_idx | PAPI_PRESET_MASK)
#define PAPI_STL_CCY (PAPI_STL_CCY_idx | PAPI_PRESET_MASK)
#define PAPI_FUL_CCY (PAPI_FUL_CCY_idx | PAPI_PRESET_MASK)
#define PAPI_HW_INT  (PAPI_HW_INT_idx | PAPI_PRESET_MASK)
#define PAPI_BR_UCN  (PAPI_BR_UCN_idx | PAPI_PRESET_MASK)
#define PAPI_BR_CN   (PAPI_BR_CN_idx | PAPI_PRESET_MASK)
#define PAPI_BR_TKN  (PAPI_BR_TKN_idx | PAPI_PRESET_MASK)
#define PAPI_BR_NTK  (PAPI_BR_NTK_idx | PAPI_PRESET_MASK)
#define PAPI_BR_MSP  (PAPI_BR_MSP_idx | PAPI_PRESET_MASK)
#define PAPI_BR_PRC  (PAPI_BR_PRC_idx | PAPI_PRESET_MASK)
#define PAPI_FMA_INS (PAPI_FMA_INS_idx | PAPI_PRESET_MASK)
#define PAPI_TOT_IIS (PAPI_TOT_IIS_idx | PAPI_PRESET_MASK)
#define PAPI_TOT_INS (PAPI_TOT_INS_idx | PAPI_PRESET_MASK)
#define PAPI_INT_INS (PAPI_INT_INS_idx | PAPI_PRESET_MASK)
#define PAPI_FP_INS  (PAPI_FP_INS_idx | PAPI_PRESET_MASK)
#define PAPI_LD_INS  (PAPI_LD_INS_idx | PAPI_PRESET_MASK)
#define PAPI_SR_INS  (PAPI_SR_INS_idx | PAPI_PRESET_MASK)
#define PAPI_BR_INS  (PAPI_BR_INS_idx | PAPI_PRESET_MASK)
#define PAPI_VEC_INS (PAPI_VEC_INS_idx | PAPI_PRESET_MASK)
#define PAPI_RES_STL (PAPI_RES_STL_idx | PAPI_PRESET_MASK)
#define PAPI_FP_STAL (PAPI_FP_STAL_idx | PAPI_PRESET_MASK)
#define PAPI_TOT_CYC (PAPI_TOT_CYC_idx | PAPI_PRESET_MASK)
#define PAPI_LST_INS (PAPI_LST_INS_idx | PAPI_PRESET_MASK)
#define PAPI_SYC_INS (PAPI_SYC_INS_idx | PAPI_PRESET_MASK)
#define PAPI_L1_DCH  (PAPI_L1_DCH_idx | PAPI_PRESET_MASK)
#define PAPI_L2_DCH  (PAPI_L2_DCH_idx | PAPI_PRESET_MASK)
#define PAPI_L1_DCA  (PAPI_L1_DCA_idx | PAPI_PRESET_MASK)
#define PAPI_L2_DCA  (PAPI_L2_DCA_idx | PAPI_PRESET_MASK)
#define PAPI_L3_DCA  (PAPI_L3_DCA_idx | PAPI_PRESET_MASK)
#define PAPI_L1_DCR  (PAPI_L1_DCR_idx | PAPI_PRESET_MASK)
#define PAPI_L2_DCR  (PAPI_L2_DCR_idx | PAPI_PRESET_MASK)
#define PAPI_L3_DCR  (PAPI_L3_DCR_idx | PAPI_PRESET_MASK)
#define PAPI_L1_DCW  (PAPI_L1_DCW_idx | PAPI_PRESET_MASK)
#define PAPI_L2_DCW  (PAPI_L2_DCW_idx | PAPI_PRESET_MASK)
#define PAPI_L3_DCW  (PAPI_L3_DCW_idx | PAPI_PRESET_MASK)
#define PAPI_L1_ICH  (PAPI_L1_ICH_idx | PAPI_PRESET_MASK)
#define PAPI_L2_ICH  (PAPI_L2_ICH_idx | PAPI_PRESET_MASK)
#define PAPI_L3_ICH  (PAPI_L3_ICH_idx | PAPI_PRESET_MASK)
#define PAPI_L1_ICA  (PAPI_L1_ICA_idx | PAPI_PRESET_MASK)
#define PAPI_L2_ICA  (PAPI_L2_ICA_idx | PAPI_PRESET_MASK)
#define PAPI_L3_ICA  (PAPI_L3_ICA_idx | PAPI_PRESET_MASK)
#define PAPI_L1_ICR  (PAPI_L1_ICR_idx | PAPI_PRESET_MASK)
#define PAPI_L2_ICR  (PAPI_L2_ICR_idx | PAPI_PRESET_MASK)
#define PAPI_L3_ICR  (PAPI_L3_ICR_idx | PAPI_PRESET_MASK)
#define PAPI_L1_ICW  (PAPI_L1_ICW_idx | PAPI_PRESET_MASK)
#define PAPI_L2_ICW  (PAPI_L2_ICW_idx | PAPI_PRESET_MASK)
#define PAPI_L3_ICW  (PAPI_L3_ICW_idx | PAPI_PRESET_MASK)
#define PAPI_L1_TCH  (PAPI_L1_TCH_idx | PAPI_PRESET_MASK)
#define PAPI_L2_TCH  (PAPI_L2_TCH_idx | PAPI_PRESET_MASK)
#define PAPI_L3_TCH  (PAPI_L3_TCH_idx | PAPI_PRESET_MASK)
#define PAPI_L1_TCA  (PAPI_L1_TCA_idx | PAPI_PRESET_MASK)
#define PAPI_L2_TCA  (PAPI_L2_TCA_idx | PAPI_PRESET_MASK)
#define PAPI_L3_TCA  (PAPI_L3_TCA_idx | PAPI_PRESET_MASK)
#define PAPI_L1_TCR  (PAPI_L1_TCR_idx | PAPI_PRESET_MASK)
#define PAPI_L2_TCR  (PAPI_L2_TCR_idx | PAPI_PRESET_MASK)
#define PAPI_L3_TCR  (PAPI_L3_TCR_idx | PAPI_PRESET_MASK)
#define PAPI_L1_TCW  (PAPI_L1_TCW_idx | PAPI_PRESET_MASK)
#define PAPI_L2_TCW  (PAPI_L2_TCW_idx | PAPI_PRESET_MASK)
#define PAPI_L3_TCW  (PAPI_L3_TCW_idx | PAPI_PRESET_MASK)
#define PAPI_FML_INS (PAPI_FML_INS_idx | PAPI_PRESET_MASK)
#define PAPI_FAD_INS (PAPI_FAD_INS_idx | PAPI_PRESET_MASK)
#define PAPI_FDV_INS (PAPI_FDV_INS_idx | PAPI_PRESET_MASK)
#define PAPI_FSQ_INS (PAPI_FSQ_INS_idx | PAPI_PRESET_MASK)
#define PAPI_FNV_INS (PAPI_FNV_INS_idx | PAPI_PRESET_MASK)
#define PAPI_FP_OPS  (PAPI_FP_OPS_idx | PAPI_PRESET_MASK)
#define PAPI_SP_OPS  (PAPI_SP_OPS_idx | PAPI_PRESET_MASK)
#define PAPI_DP_OPS  (PAPI_DP_OPS_idx | PAPI_PRESET_MASK)
#define PAPI_VEC_SP  (PAPI_VEC_SP_idx | PAPI_PRESET_MASK)
#define PAPI_VEC_DP  (PAPI_VEC_DP_idx | PAPI_PRESET_MASK)
#define PAPI_REF_CYC (PAPI_REF_CYC_idx | PAPI_PRESET_MASK)
#define PAPI_END     (PAPI_END_idx | PAPI_PRESET_MASK)

#endif /* _PAPISTDEVENTDEFS */
