package capability

import "strings"

// Path says how a call or a decision arrived (DESIGN.md §2); it is
// recorded on approval requests as requested_via and on audit events as
// via.
type Path string

// The paths. An agent path is "agent:<conversation id>"; see AgentPath.
const (
	// PathREST is the JSON API (/v1).
	PathREST Path = "rest"
	// PathBinding is a UI binding: POST /v1/capabilities/{name}/invoke.
	PathBinding Path = "binding"
	// PathWeb is the back-office inbox's HTML forms.
	PathWeb Path = "web"
	// PathCLI is the invoiced command.
	PathCLI Path = "cli"
	// PathMCP is an MCP client's tool call at /mcp: an agent acting for
	// the token's user, outside the step loop.
	PathMCP Path = "mcp"
	// PathSystem is the service itself, such as the sweep that expires
	// approval requests.
	PathSystem Path = "system"
)

const agentPrefix = "agent:"

// AgentPath is the path of a model's tool call in a conversation.
func AgentPath(conversationID string) Path { return Path(agentPrefix + conversationID) }

// Conversation returns the conversation of an agent path, and whether p
// is one.
func (p Path) Conversation() (string, bool) {
	return strings.CutPrefix(string(p), agentPrefix)
}
