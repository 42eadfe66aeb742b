//! A scripted fake LLM provider served over real HTTPS on loopback, speaking the
//! public wire formats of OpenAI, Anthropic and Gemini. Used by the test suite
//! and to record the demo agents' cassettes.
