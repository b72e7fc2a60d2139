"""The OpenAPI schema generator: drf-spectacular's, plus the error responses every operation can give.

Any operation may answer 400 (bad parameters or body), 401 (no or bad credentials), 403 (role) and 404 (not in your
projects, or a page past the end) with the API's one error shape; operations with a body may also answer 413 and
415. Declaring them once here keeps the schema true without repeating them on every view.
"""

from drf_spectacular.openapi import AutoSchema as SpectacularAutoSchema
from drf_spectacular.utils import OpenApiResponse

ERROR_CODES = ("400", "401", "403", "404")
BODY_ERROR_CODES = ("413", "415")


class AutoSchema(SpectacularAutoSchema):
    def _get_response_bodies(self, direction="response"):
        from .serializers import ErrorSerializer

        responses = super()._get_response_bodies(direction)
        codes = ERROR_CODES + (BODY_ERROR_CODES if self.method in ("POST", "PUT", "PATCH") else ())
        for code in codes:
            if code not in responses:
                error = OpenApiResponse(ErrorSerializer, description="The API's error shape.")
                responses[code] = self._get_response_for_code(error, code, direction=direction)
        return responses
