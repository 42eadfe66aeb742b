//! The three-layer engine: correctness (hard), path (soft, forbidden tools hard),
//! cost (soft), and the LLM judge.
