"""Any agent that speaks the Agent Client Protocol as a backend (``--backend acp:NAME``): monkey is its client."""
